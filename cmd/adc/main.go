// Command adc is the migration-aware attach/detach controller and its operator tools.
package main

import (
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(exitCode(err))
	}
}
