package topo

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
)

// The model commands (simulate, scale) share their command-line plumbing:
// a flag set that prints nothing itself, every bad flag reported at once,
// and the same arguments as a JSON object for the C ABI.

// flagUsage is the flag set's defaults, as -h prints them.
func flagUsage(fs *flag.FlagSet) string {
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return b.String()
}

// parseFlags parses args into fs and refuses positional arguments; errors
// name the command.
func parseFlags(cmd string, fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", cmd, fs.Arg(0))
	}
	return nil
}

// flagErrors collects the bad values of several flags, so that one run
// reports them all.
type flagErrors []error

func (e *flagErrors) add(name string, err error) {
	if err != nil {
		*e = append(*e, fmt.Errorf("--%s: %w", name, err))
	}
}

// err is nil when every flag was good, else all the errors under cmd.
func (e flagErrors) err(cmd string) error {
	if len(e) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", cmd, errors.Join(e...))
}

// answerJSON runs a model command for the C ABI: argsJSON (see jsonArgs)
// becomes its arguments, and run's answer is returned as JSON.
func answerJSON(cmd, argsJSON string, run func(args []string) (any, error)) (string, error) {
	args, err := jsonArgs(argsJSON)
	if err != nil {
		return "", fmt.Errorf("%s: %w", cmd, err)
	}
	answer, err := run(args)
	if err != nil {
		return "", err
	}
	out, err := json.Marshal(answer)
	if err != nil {
		return "", fmt.Errorf("%s: %w", cmd, err)
	}
	return string(out), nil
}
