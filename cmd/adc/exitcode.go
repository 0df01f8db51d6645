package main

import "errors"

// Exit codes of the checking subcommands (preflight, explain): 0 when nothing is wrong, 1
// when the check found something that blocks, 2 when it could not check at all (bad input,
// a cluster or controller that does not answer). Other errors exit 1.
const (
	exitBlocked     = 1
	exitCouldNotRun = 2
)

// exitError gives an error the process exit code it should end with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExitCode wraps err (nil stays nil) so that main exits with code.
func withExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// exitCode returns the exit code an error carries, 1 for any other error.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return 1
}
