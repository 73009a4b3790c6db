package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/switchyard-gw/switchyard/internal/config"
)

// cmdInit is `switchyard init [--output FILE] [--force]`: writes the commented starter
// configuration (config.Starter: the built-in catalog, every section explained) to
// ./switchyard.yaml, or FILE ("-" for stdout), refusing to replace an existing file without
// --force, and prints what to do next.
func cmdInit(args []string, out io.Writer) error {
	fl := newFlags("init", "init [--output FILE] [--force]",
		"Writes a commented starter configuration: the built-in catalog with every section explained.")
	file := fl.String("output", "switchyard.yaml", `file to write ("-": standard output)`)
	force := fl.Bool("force", false, "replace the file if it exists")
	if err := parseFlags(fl, args); err != nil {
		return err
	}
	if *file == "-" {
		_, err := out.Write(config.Starter())
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if *force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(*file, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; keep it, or run `switchyard init --force` to replace it", *file)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(config.Starter()); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	flag := ""
	if *file != "switchyard.yaml" {
		flag = " --config " + *file
	}
	fmt.Fprintf(out, `wrote %s: the built-in catalog (OpenAI and Anthropic models), every section explained.
Next:
  export SWITCHYARD_API_KEY=$(openssl rand -hex 24)   # the key your apps will send
  export OPENAI_API_KEY=sk-... ANTHROPIC_API_KEY=sk-ant-...
  switchyard check%[2]s                                # validate it
  switchyard serve%[2]s --pid-file switchyard.pid      # run it
  switchyard reload --pid-file switchyard.pid        # after an edit (or: kill -HUP PID)
`, *file, flag)
	return nil
}
