//go:build tools

package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
	_ "sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue"
	_ "sigs.k8s.io/kueue/test/performance/scheduler/runner"
)
