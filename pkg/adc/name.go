package adc

// ControllerManagerName is adc's canonical controller name inside kube-controller-manager:
// the name of its controller descriptor (and so of --controllers and of its /healthz/<name>
// check). It follows kube-controller-manager's naming rule: lower case words joined by "-",
// ending in "-controller".
const ControllerManagerName = "migration-aware-attach-detach-controller"
