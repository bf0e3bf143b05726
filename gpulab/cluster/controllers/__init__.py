"""kube-controller-manager's controllers for the embedded cluster, one module each."""
