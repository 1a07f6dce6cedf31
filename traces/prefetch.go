package traces

import (
	"io"
	"sync"
)

// prefetchReader reads its source (file, decompression and byte-level
// limits) in its own goroutine, a chunk ahead of the JSON decoder, so that
// reading and decoding use two cores. Close must be called to stop the
// goroutine when the consumer finishes early.
type prefetchReader struct {
	chunks chan prefetchChunk
	free   chan []byte
	done   chan struct{}
	once   sync.Once
	cur    prefetchChunk
	off    int
}

type prefetchChunk struct {
	buf []byte
	err error
}

const (
	prefetchChunkSize = 128 << 10
	prefetchDepth     = 3
)

func newPrefetchReader(src io.Reader) *prefetchReader {
	p := &prefetchReader{
		chunks: make(chan prefetchChunk, prefetchDepth),
		free:   make(chan []byte, prefetchDepth+2),
		done:   make(chan struct{}),
	}
	go p.run(src)
	return p
}

func (p *prefetchReader) run(src io.Reader) {
	defer close(p.chunks)
	allocated := 0
	for {
		// Buffers are allocated on demand (small inputs need one) and
		// recycled through free once the decoder has consumed them.
		var buf []byte
		select {
		case buf = <-p.free:
		case <-p.done:
			return
		default:
			if allocated < prefetchDepth+2 {
				allocated++
				buf = make([]byte, prefetchChunkSize)
			} else {
				select {
				case buf = <-p.free:
				case <-p.done:
					return
				}
			}
		}
		n, err := io.ReadFull(src, buf)
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		select {
		case p.chunks <- prefetchChunk{buf: buf[:n], err: err}:
		case <-p.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (p *prefetchReader) Read(b []byte) (int, error) {
	for p.off >= len(p.cur.buf) {
		if p.cur.err != nil {
			return 0, p.cur.err
		}
		if p.cur.buf != nil {
			p.free <- p.cur.buf[:cap(p.cur.buf)]
		}
		c, ok := <-p.chunks
		if !ok {
			return 0, io.EOF
		}
		p.cur, p.off = c, 0
	}
	n := copy(b, p.cur.buf[p.off:])
	p.off += n
	return n, nil
}

// Close stops the reading goroutine.
func (p *prefetchReader) Close() { p.once.Do(func() { close(p.done) }) }
