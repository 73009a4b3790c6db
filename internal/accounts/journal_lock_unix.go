//go:build unix

package accounts

import (
	"errors"
	"os"
	"syscall"
)

// lockJournal takes an exclusive, non-blocking flock(2) on f: held by the process that writes
// the journal for as long as it lives (the kernel drops it when the process dies, kill -9
// included), and by a replay while it reads a dead process's journal. false: another open file
// holds it (a live process's journal, or a replay already under way).
func lockJournal(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
