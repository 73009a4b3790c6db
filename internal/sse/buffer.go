package sse

// BufferCap is the capacity, in bytes, of the buffers the Reader keeps across Reset (its read
// buffer and its data join buffer), so that a pool can drop a Reader that grew on one huge
// event instead of pinning the memory for ever.
func (r *Reader) BufferCap() int { return cap(r.buf) + cap(r.data) }
