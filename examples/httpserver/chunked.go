package main

import (
	"bytes"
	"errors"
	"strings"
)

// chunks decodes a chunked request body (RFC 9112 section 7.1), trailer
// included, as its bytes arrive, in whatever pieces: the body is only
// discarded, so decoding is finding where it ends. It is as strict as
// net/http's chunked reader (net/http/internal/chunked.go, Go 1.26): lines
// end in CRLF with no other CR, a size line is under 4 KiB, a size has at
// most 16 hex digits, extensions after ';' are ignored, chunk data is
// followed by CRLF, and at most 16 KiB of framing beyond what the data
// accounts for. The trailer's lines must be header fields, 4 KiB in all.
// FuzzChunks checks it against net/http's reader. The zero value decodes
// a new body.
type chunks struct {
	phase   uint8
	left    uint64 // data bytes of the current chunk still to come
	data    int64  // data bytes of the body so far
	excess  int64  // framing bytes beyond what the data accounts for
	trailer int    // trailer bytes so far
}

const (
	chunkSize    uint8 = iota // a chunk-size line
	chunkData                 // a chunk's data
	chunkDataEnd              // the CRLF after a chunk's data
	chunkTrailer              // a trailer line, or the empty line that ends the body
	chunkDone
)

const (
	maxChunkLine  = 4096     // net/http's maxLineLength
	maxExcess     = 16 << 10 // net/http's limit on non-data bytes
	maxTrailer    = 4096     // net/http sees a trailer only within one 4 KiB read
	chunkOverhead = 16       // framing bytes a chunk may have: net/http's allowance
	maxChunkDigit = 16       // a size of more hex digits overflows
)

var (
	errChunkLine    = errors.New("malformed chunked encoding")
	errChunkTooLong = errors.New("chunk line too long")
	errBodyTooLarge = errors.New("chunked body longer than the server reads")
)

// decode consumes what it can of buf, the bytes of the body not yet
// consumed, and returns how many it consumed and whether the body is
// complete. An error means the body is malformed (400) or, for
// errBodyTooLarge, declares more than maxBody bytes of data (413); either
// way the connection must close. O(len(buf)), no allocation
// (TestChunksZeroAllocs).
func (d *chunks) decode(buf []byte) (n int, done bool, err error) {
	for d.phase != chunkDone {
		rest := buf[n:]
		switch d.phase {
		case chunkData:
			if len(rest) == 0 {
				return n, false, nil
			}
			k := int(min(d.left, uint64(len(rest))))
			n += k
			if d.left -= uint64(k); d.left == 0 {
				d.phase = chunkDataEnd
			}
		case chunkDataEnd:
			if len(rest) < 2 {
				if len(rest) == 1 && rest[0] != '\r' {
					return n, false, errChunkLine
				}
				return n, false, nil
			}
			if rest[0] != '\r' || rest[1] != '\n' {
				return n, false, errChunkLine
			}
			n += 2
			d.phase = chunkSize
		default: // a line: a chunk size or a trailer field
			line, err := chunkLine(rest)
			if err != nil || line == nil {
				return n, false, err
			}
			n += len(line) + 2
			if d.phase == chunkSize {
				err = d.size(line)
			} else {
				err = d.trailerLine(line)
			}
			if err != nil {
				return n, false, err
			}
		}
	}
	return n, true, nil
}

// chunkLine returns the line at the start of buf without its CRLF, nil if
// its end has not arrived, or an error if it is malformed or too long.
func chunkLine(buf []byte) ([]byte, error) {
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		if len(buf) > maxChunkLine {
			return nil, errChunkTooLong
		}
		return nil, nil
	}
	if i == 0 || bytes.IndexByte(buf[:i], '\r') != i-1 {
		return nil, errChunkLine // a bare LF, or a CR inside the line
	}
	line := buf[: i-1 : i-1] // not nil: buf holds the LF
	if len(line) >= maxChunkLine {
		return nil, errChunkTooLong
	}
	return line, nil
}

// size handles a chunk-size line.
func (d *chunks) size(line []byte) error {
	d.excess += int64(len(line)) + 2 // as net/http counts: the line and the data's CRLF
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = line[:len(line)-1]
	}
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	if len(line) == 0 || len(line) > maxChunkDigit {
		return errChunkLine
	}
	var size uint64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return errChunkLine
		}
		size = size<<4 | uint64(c)
	}
	if size > maxBody || d.data+int64(size) > maxBody {
		return errBodyTooLarge
	}
	d.data += int64(size)
	d.excess = max(d.excess-chunkOverhead-2*int64(size), 0)
	if d.excess > maxExcess {
		return errChunkLine
	}
	if size == 0 {
		d.phase = chunkTrailer
	} else {
		d.left, d.phase = size, chunkData
	}
	return nil
}

// trailerLine handles a line of the trailer, the empty one ending it. As
// net/http's textproto does, it takes a line that begins with white space
// after a field as the field's continuation (obs-fold).
func (d *chunks) trailerLine(line []byte) error {
	if len(line) == 0 {
		d.phase = chunkDone
		return nil
	}
	folded := d.trailer > 0 && (line[0] == ' ' || line[0] == '\t')
	if d.trailer += len(line) + 2; d.trailer > maxTrailer {
		return errChunkLine
	}
	value := line // an obs-folded line continues the field before
	if !folded {
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return errChunkLine
		}
		if !validName(line[:colon]) {
			return errChunkLine
		}
		value = line[colon+1:]
	}
	if !validValue(value) {
		return errChunkLine
	}
	return nil
}

// isTokenByte reports whether c may appear in a field name (RFC 9110
// section 5.6.2).
func isTokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c != 0 && strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
