// Package sse owns byte-level Server-Sent Events framing for the gateway: a Reader that splits an
// upstream text/event-stream into events, and WriteEvent/WriteComment that frame events for the
// caller. It knows nothing about JSON or dialects; dialect packages decode Event.Data themselves.
//
// Framing follows the WHATWG "event stream interpretation" rules and the pitfalls listed in
// wire.md §6: LF, CR and CRLF line terminators (a CRLF split across two reads is one
// terminator), comment lines skipped, `data:` lines joined with "\n", no fixed line cap (only
// Reader.MaxEventBytes, which fails with the typed ErrEventTooLarge), and framing on bytes so a
// UTF-8 rune split across reads is never touched.
//
// Rules it serves:
//   - R-FAIL-4 and R-BILL-2: a stream that ends inside an event is reported as
//     io.ErrUnexpectedEOF, distinct from a clean io.EOF, so the caller can treat it as an
//     upstream truncation instead of a normal end (wire.md §6 "Truncation").
//   - R-DIALECT-3: Event.Raw carries the exact bytes of each event so same-dialect traffic can be
//     passed through unchanged.
//   - R-FAIL-2: comment keep-alives never surface as events, so they cannot be mistaken for output.
//
// The Reader does not allocate in steady state: events alias its buffer, which grows as needed
// and is kept across Reset for pooling.
package sse
