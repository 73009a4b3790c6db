package main

import (
	"fmt"
	"io"
	"os"

	"github.com/switchyard-gw/switchyard/internal/litellm"
)

// cmdImport is `switchyard import litellm CONFIG.yaml`: writes the Switchyard configuration of
// a LiteLLM proxy config to stdout and lists on stderr everything it could not map, with the
// reason (docs/import-litellm.md).
func cmdImport(args []string, out, errOut io.Writer) error {
	fs := newFlags("import", "import litellm CONFIG.yaml > switchyard.yaml",
		"Converts a LiteLLM proxy config.yaml into a Switchyard configuration on standard output; what\nhas no equivalent is listed on standard error with the reason. Then: switchyard check.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 || fs.Arg(0) != "litellm" {
		fmt.Fprintln(cliErr, "switchyard import: want `switchyard import litellm CONFIG.yaml` (litellm is the only source so far)")
		fs.Usage()
		return errUsage
	}
	file := fs.Arg(1)
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, litellm.MaxInputBytes+1))
	if err != nil {
		return err
	}
	cfg, notes, err := litellm.Convert(file, data)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(errOut, "%s: %s\n", file, n)
	}
	if len(notes) > 0 {
		fmt.Fprintf(errOut, "%s: %d settings above were not mapped as written; the output says what was\n", file, len(notes))
	}
	_, err = out.Write(cfg)
	return err
}
