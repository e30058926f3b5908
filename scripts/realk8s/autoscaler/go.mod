// cluster-autoscaler's API module: the ProvisioningRequest CRD the tests install
// (config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml), at the version Kueue requires.
module mkq.dev/realk8s/autoscaler

go 1.24

require k8s.io/autoscaler/cluster-autoscaler/apis v0.0.0-20240830133931-adfbe7e45277
