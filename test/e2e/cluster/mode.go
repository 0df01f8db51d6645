package cluster

import (
	"fmt"
	"strings"
)

// Mode says which attach/detach controller a cluster runs, and how.
type Mode string

// The three modes; every scenario runs in each.
const (
	// KCMADC is kube-controller-manager with adc inside, adc switched on in place of the
	// built-in attach/detach controller, as a distribution that carries adc runs it.
	KCMADC Mode = "kcm-adc"
	// Stock is the stock kube-controller-manager v1.36.3 with its own attach/detach
	// controller: the baseline users have today.
	Stock Mode = "stock"
	// Standalone is the stock kube-controller-manager without its attach/detach controller
	// and the adc binary as a process of its own (deploy/kubernetes).
	Standalone Mode = "standalone"
)

// Modes are all modes, in the order reports list them.
var Modes = []Mode{KCMADC, Stock, Standalone}

// builtInADC is the name of kube-controller-manager's own attach/detach controller.
const builtInADC = "persistentvolume-attach-detach-controller"

// adcInKCM is the name adc registers under in kube-controller-manager (pkg/adc.ControllerManagerName,
// spelled out as an operator types it).
const adcInKCM = "migration-aware-attach-detach-controller"

// Controllers returns the mode's --controllers: every default controller, and the
// attach/detach controller of the mode.
func (m Mode) Controllers() string {
	switch m {
	case KCMADC:
		return "*," + adcInKCM + ",-" + builtInADC
	case Standalone:
		return "*,-" + builtInADC
	default:
		return "*"
	}
}

// RunsADC says whether adc attaches in this mode (inside kube-controller-manager or not).
func (m Mode) RunsADC() bool { return m == KCMADC || m == Standalone }

// Describe says in a few words what attaches in this mode.
func (m Mode) Describe() string {
	switch m {
	case KCMADC:
		return "adc inside kube-controller-manager v1.36.3"
	case Stock:
		return "kube-controller-manager v1.36.3's own attach/detach controller"
	case Standalone:
		return "adc as its own process, kube-controller-manager v1.36.3 without its attach/detach controller"
	}
	return string(m)
}

// ParseMode returns the mode named s.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("unknown mode %q: want one of %s", s, strings.Join(names, ", "))
}
