package framework

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// RunCommand runs a binary (the adc binary a suite built) and returns its stdout, stderr and
// exit code; it fails the test only when the binary could not run at all.
func RunCommand(t testing.TB, binary string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx := t.Context()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &exit):
		return out.String(), errOut.String(), exit.ExitCode()
	}
	t.Fatalf("running %s %s: %v", binary, strings.Join(args, " "), err)
	return "", "", -1
}
