package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// maxGroup bounds how many incidents one group commit carries.
const maxGroup = 64

// errClosed is returned for writes submitted after Close.
var errClosed = errors.New("store is closed")

// packed is an incident's evidence, encoded by the caller's goroutine so
// the writer only runs SQL.
type packed struct {
	snapshot, windows []byte
}

func pack(in NewIncident) (packed, error) {
	snap, err := packSnapshot(in.Snapshot)
	if err != nil {
		return packed{}, fmt.Errorf("encode snapshot: %w", err)
	}
	windows, err := packWindows(in.Windows)
	if err != nil {
		return packed{}, fmt.Errorf("encode windows: %w", err)
	}
	return packed{snapshot: snap, windows: windows}, nil
}

type openRequest struct {
	ctx    context.Context
	in     NewIncident
	d      DiagnosisRecord
	packed packed
	done   chan openResult // buffered: the writer never blocks on it
}

type openResult struct {
	id, diagnosisID int64
	created         bool
	err             error
}

// opener is the group-commit writer for OpenIncident.
type opener struct {
	s      *Store
	mu     sync.RWMutex // guards closed against submit
	closed bool
	reqs   chan *openRequest
	wg     sync.WaitGroup
}

func newOpener(s *Store) *opener {
	o := &opener{s: s, reqs: make(chan *openRequest, maxGroup)}
	o.wg.Add(1)
	go o.run()
	return o
}

func (o *opener) submit(r *openRequest) error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return errClosed
	}
	o.reqs <- r
	return nil
}

// close stops accepting requests and waits for the writer to commit and
// answer every request already submitted.
func (o *opener) close() {
	o.mu.Lock()
	if !o.closed {
		o.closed = true
		close(o.reqs)
	}
	o.mu.Unlock()
	o.wg.Wait()
}

func (o *opener) run() {
	defer o.wg.Done()
	for first := range o.reqs {
		batch := []*openRequest{first}
	drain:
		for len(batch) < maxGroup {
			select {
			case r, ok := <-o.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		o.commit(batch)
	}
}

// commit writes a batch in one transaction, each request in a savepoint.
func (o *opener) commit(batch []*openRequest) {
	results := make([]openResult, len(batch))
	fail := func(err error) {
		for i, r := range batch {
			if results[i].err == nil {
				results[i] = openResult{err: err}
			}
			r.done <- results[i]
		}
	}
	ctx := context.Background() // requests carry their own contexts; one cancelled caller must not abort the others
	tx, err := o.s.w.BeginTx(ctx, nil)
	if err != nil {
		fail(fmt.Errorf("begin: %w", err))
		return
	}
	defer tx.Rollback()
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			results[i].err = err
			continue
		}
		if _, err := tx.ExecContext(ctx, `SAVEPOINT open_incident`); err != nil {
			fail(fmt.Errorf("savepoint: %w", err))
			return
		}
		id, diagID, created, err := openIncident(ctx, tx, r.in, r.d, r.packed)
		if err != nil {
			results[i].err = err
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO open_incident`); err != nil {
				fail(fmt.Errorf("rollback to savepoint: %w", err))
				return
			}
		} else {
			results[i] = openResult{id: id, diagnosisID: diagID, created: created}
		}
		if _, err := tx.ExecContext(ctx, `RELEASE open_incident`); err != nil {
			fail(fmt.Errorf("release savepoint: %w", err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		for i := range results {
			results[i] = openResult{err: fmt.Errorf("commit: %w", err)}
		}
	}
	for i, r := range batch {
		r.done <- results[i]
	}
}
