package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// cmdReload is `switchyard reload --pid-file FILE | --pid PID`: sends SIGHUP to a running
// `switchyard serve`, which re-reads its configuration file (the gateway logs whether the
// new configuration was taken or refused, with the problems of a refused one).
func cmdReload(args []string, out io.Writer) error {
	fs := newFlags("reload", "reload (--pid-file FILE | --pid PID)",
		"Makes a running `switchyard serve` re-read its configuration file (sends it SIGHUP). The\ngateway validates the file like `switchyard check`; run check first to see problems here.")
	pidFile := fs.String("pid-file", "", "the `FILE` that switchyard serve --pid-file wrote")
	pid := fs.Int("pid", 0, "the process id of the gateway")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *pidFile != "" && *pid != 0:
		return fmt.Errorf("reload: give --pid-file or --pid, not both")
	case *pidFile != "":
		data, err := os.ReadFile(*pidFile)
		if err != nil {
			return fmt.Errorf("reload: %w (is the gateway running with serve --pid-file %s?)", err, *pidFile)
		}
		if *pid, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil || *pid <= 0 {
			return fmt.Errorf("reload: %s does not hold a process id", *pidFile)
		}
	case *pid <= 0:
		fmt.Fprintln(cliErr, "switchyard reload: --pid-file or --pid is required (start the gateway with serve --pid-file FILE)")
		fs.Usage()
		return errUsage
	}
	p, err := os.FindProcess(*pid)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	if err := p.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("reload: process %d: %w", *pid, err)
	}
	fmt.Fprintf(out, "sent SIGHUP to process %d: the gateway's log says whether the configuration was reloaded\n", *pid)
	return nil
}
