"""`kubectl explain` on the Kueue CRDs: the descriptions the models' field docs put in the
schema reach kubectl through the API server's OpenAPI v3 document."""

from __future__ import annotations

import re

from kueue_api.crds import CRD_SPECS, crd_manifest
from tests.fidelity.harness import Kubectl

_FIELD = re.compile(r"^  (\S+)\t?\s*<[^>]+>")


def explained_fields(text: str) -> dict[str, str]:
    """The FIELDS section of `kubectl explain` (plaintext): each field and its description."""
    fields: dict[str, str] = {}
    lines = text.splitlines()
    if "FIELDS:" not in lines:
        return fields
    current: str | None = None
    for line in lines[lines.index("FIELDS:") + 1 :]:
        match = _FIELD.match(line)
        if match:
            current = match.group(1)
            fields[current] = ""
        elif current is not None and line.startswith("    "):
            fields[current] = f"{fields[current]} {line.strip()}".strip()
    return fields


def _spec_fields(kind: str) -> dict[str, str]:
    spec = next(s for s in CRD_SPECS if s.kind == kind)
    schema = crd_manifest(spec)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return {
        name: " ".join(node["description"].split())
        for name, node in schema["properties"]["spec"]["properties"].items()
    }


def test_explained_fields_reads_kubectls_layout() -> None:
    text = (
        "GROUP:      kueue.x-k8s.io\nKIND:       ClusterQueue\nVERSION:    v1beta2\n\n"
        "FIELD: spec <Object>\n\nDESCRIPTION:\n    The spec.\n    \nFIELDS:\n"
        "  cohortName\t<string>\n    The cohort\n    of the queue.\n\n"
        "  preemption\t<Object>\n    <no description>\n\n"
        "  stopPolicy\t<string>\n  enum: Hold, HoldAndDrain, None\n    Stops it.\n"
    )
    assert explained_fields(text) == {
        "cohortName": "The cohort of the queue.",
        "preemption": "<no description>",
        "stopPolicy": "Stops it.",
    }


async def test_kubectl_explain_describes_every_field_of_clusterqueue_spec(
    kubectl: Kubectl,
) -> None:
    out = await kubectl.ok("explain", "clusterqueues.spec", "--api-version=kueue.x-k8s.io/v1beta2")
    fields = explained_fields(out)
    expected = _spec_fields("ClusterQueue")
    assert sorted(fields) == sorted(expected), out
    for name, description in fields.items():
        assert description and description != "<no description>", f"{name}: {out}"
        # kubectl rewraps the text; the words are the model's field docstring.
        assert " ".join(description.split()) == expected[name], name
    assert "The queue's quotas and policies." in out  # spec's own description
