package accounts

// Queued returns how many ledger entries wait to be written (a batch being retried included).
func (w *Writer) Queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}
