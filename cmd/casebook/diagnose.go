package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/metrics"
)

// diagnoseCmd reads one snapshot, or JSON Lines of snapshots, from a file or
// stdin and writes one diagnosis JSON per line in input order. A line that
// cannot be diagnosed becomes {"error": "line N: ..."} and processing goes on.
func diagnoseCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("diagnose", flag.ContinueOnError)
	casesPath := fs.String("cases", "", "labelled cases (JSON Lines, one metrics.Case a line) for similar-case matching")
	langFlag := fs.String("lang", "en", "language of the diagnoses' texts (titles, evidence, actions, notes): en or zh-CN; ids and field names stay English")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: casebook diagnose [--cases KB.jsonl] [--lang en|zh-CN] [FILE]\n\nReads a snapshot or JSON Lines of snapshots from FILE (or stdin, or -) and\nwrites one diagnosis JSON per line.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, env, stderr); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("%w: diagnose takes at most one FILE, got %d", errUsage, fs.NArg())
	}
	tag, ok := i18n.Parse(*langFlag)
	if !ok {
		return fmt.Errorf("%w: --lang %q: the texts are in en or zh-CN", errUsage, *langFlag)
	}
	loc := i18n.New(tag)
	in, closeIn, err := openInput(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("diagnose: %w", err)
	}
	defer closeIn()
	opts := diagnose.Options{}
	if *casesPath != "" {
		kb, bad, err := loadCases(ctx, *casesPath, stderr)
		if err != nil {
			return fmt.Errorf("diagnose: load cases: %w", err)
		}
		fmt.Fprintln(stderr, loc.T("cli.cases_loaded", kb.Len(), *casesPath, bad))
		opts.Cases = kb
	}
	return diagnoseStreamIn(ctx, diagnose.New(opts), loc.Code(), in, stdout, runtime.GOMAXPROCS(0))
}

// openInput opens path, or stdin for "" and "-".
func openInput(path string) (io.Reader, func(), error) {
	if path == "" || path == "-" {
		return os.Stdin, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open input: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// loadCases reads a labelled-case file into a knowledge base for
// similar-case matching, reporting bad lines on stderr. A case file holds
// known labels, so every case teaches; each is named FILE:LINE.
func loadCases(ctx context.Context, path string, stderr io.Writer) (*diagnose.KnowledgeBase, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	kb := diagnose.NewKnowledgeBase()
	name := filepath.Base(path)
	bad := 0
	err = forEachRecord(ctx, f, func(rec record) error {
		if rec.err != nil {
			bad++
			fmt.Fprintf(stderr, "diagnose: %s line %d: %v\n", path, rec.line, rec.err)
			return nil
		}
		c, err := metrics.DecodeCase(rec.data)
		if err == nil {
			err = kb.Add(diagnose.LabelledCase{ID: fmt.Sprintf("%s:%d", name, rec.line), Snapshot: c.Snapshot, Cause: c.Label, Review: diagnose.Truth})
		}
		if err != nil {
			bad++
			fmt.Fprintf(stderr, "diagnose: %s line %d: %v\n", path, rec.line, err)
		}
		return nil
	})
	return kb, bad, err
}

// record is one input record: a JSON Lines line, or a whole multi-line
// document. err is set when the line could not be read whole (too long).
type record struct {
	line int
	data []byte
	err  error
}

// errTooLong marks a line over metrics.MaxSnapshotBytes.
var errTooLong = fmt.Errorf("%w: line is longer than the %d-byte limit", metrics.ErrInvalid, metrics.MaxSnapshotBytes)

// readChunk is the bufio buffer size; longer lines are assembled from chunks
// up to metrics.MaxSnapshotBytes and skipped beyond it, so a 100 MB line
// never sits in memory.
const readChunk = 64 << 10

// forEachRecord splits r into records and calls fn for each, in order.
// Blank lines are skipped. If the first line is not a complete JSON value,
// the input may be one pretty-printed snapshot: up to MaxSnapshotBytes are
// read, and if they form one JSON value that is the single record;
// otherwise the buffered lines are treated as JSON Lines after all.
func forEachRecord(ctx context.Context, r io.Reader, fn func(record) error) error {
	br := bufio.NewReaderSize(r, readChunk)
	lr := &lineReader{br: br}
	first := true
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, line, tooLong, err := lr.next()
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read input: %w", err)
		}
		if data == nil && !tooLong && errors.Is(err, io.EOF) {
			return nil
		}
		trimmed := bytes.TrimSpace(data)
		if len(trimmed) == 0 && !tooLong {
			if errors.Is(err, io.EOF) {
				return nil
			}
			continue
		}
		if first && !tooLong && !json.Valid(trimmed) && !errors.Is(err, io.EOF) {
			first = false
			doc, rest, derr := lr.tryDocument(trimmed)
			if derr != nil {
				return fmt.Errorf("read input: %w", derr)
			}
			if doc != nil {
				return fn(record{line: line, data: doc})
			}
			// Not one document: replay the buffered lines as JSON Lines.
			if err := fn(record{line: line, data: append([]byte(nil), trimmed...)}); err != nil {
				return err
			}
			for _, l := range rest {
				if len(bytes.TrimSpace(l.data)) == 0 && l.err == nil {
					continue
				}
				if err := fn(l); err != nil {
					return err
				}
			}
			continue
		}
		first = false
		// The line buffer is reused: hand fn its own copy.
		rec := record{line: line, data: append([]byte(nil), trimmed...)}
		if tooLong {
			rec = record{line: line, err: errTooLong}
		}
		if err := fn(rec); err != nil {
			return err
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// lineReader reads lines of bounded length and numbers them.
type lineReader struct {
	br   *bufio.Reader
	line int
	buf  []byte
}

// next returns the next line without its newline, its number, and whether
// it was over the limit (then data is nil). err is io.EOF at the end.
func (lr *lineReader) next() (data []byte, line int, tooLong bool, err error) {
	lr.line++
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if !tooLong {
			if len(lr.buf)+len(chunk) > metrics.MaxSnapshotBytes+1 {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			if tooLong {
				return nil, lr.line, true, err
			}
			if len(lr.buf) == 0 {
				return nil, lr.line, false, err
			}
			return lr.buf, lr.line, false, err
		}
		if tooLong {
			return nil, lr.line, true, nil
		}
		return bytes.TrimSuffix(lr.buf, []byte{'\n'}), lr.line, false, nil
	}
}

// tryDocument reads on from an incomplete first line. It returns the whole
// input as one document when it is a single JSON value within the size
// limit, or else the lines it read ahead, to be handled as JSON Lines.
func (lr *lineReader) tryDocument(first []byte) ([]byte, []record, error) {
	doc := append([]byte(nil), first...)
	var rest []record
	over := false
	for {
		data, line, tooLong, err := lr.next()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, err
		}
		switch {
		case tooLong:
			over = true
			rest = append(rest, record{line: line, err: errTooLong})
		case data != nil:
			rest = append(rest, record{line: line, data: append([]byte(nil), bytes.TrimSpace(data)...)})
			if !over {
				if len(doc)+len(data)+1 > metrics.MaxSnapshotBytes {
					over = true
				} else {
					doc = append(doc, '\n')
					doc = append(doc, data...)
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if over {
			// Too big to be one snapshot: the remaining lines are JSON
			// Lines; stop reading ahead.
			break
		}
	}
	if !over && json.Valid(bytes.TrimSpace(doc)) {
		return bytes.TrimSpace(doc), nil, nil
	}
	return nil, rest, nil
}

// job is one record with its position in the output.
type job struct {
	seq int
	rec record
}

// result is one output line.
type result struct {
	seq int
	out []byte
}

// diagnoseStream diagnoses every record of r with workers goroutines and
// writes the results to w in input order, with English texts.
func diagnoseStream(ctx context.Context, e *diagnose.Engine, r io.Reader, w io.Writer, workers int) error {
	return diagnoseStreamIn(ctx, e, "en", r, w, workers)
}

// diagnoseStreamIn is diagnoseStream with the diagnoses' texts in lang
// (diagnose.Localize: the same fields and ids, other words).
func diagnoseStreamIn(ctx context.Context, e *diagnose.Engine, lang string, r io.Reader, w io.Writer, workers int) error {
	if workers < 1 {
		workers = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan job, 4*workers)
	results := make(chan result, 4*workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				select {
				case results <- result{seq: j.seq, out: diagnoseRecord(e, lang, j.rec)}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	readErr := make(chan error, 1)
	go func() {
		defer close(jobs)
		seq := 0
		readErr <- forEachRecord(ctx, r, func(rec record) error {
			select {
			case jobs <- job{seq: seq, rec: rec}:
				seq++
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	bw := bufio.NewWriterSize(w, 64<<10)
	pending := map[int][]byte{}
	nextSeq := 0
	var writeErr error
	for res := range results {
		pending[res.seq] = res.out
		for {
			out, ok := pending[nextSeq]
			if !ok {
				break
			}
			delete(pending, nextSeq)
			nextSeq++
			if writeErr == nil {
				if _, err := bw.Write(out); err != nil {
					writeErr = fmt.Errorf("diagnose: write output: %w", err)
					cancel()
				}
			}
		}
	}
	if err := bw.Flush(); err != nil && writeErr == nil {
		writeErr = fmt.Errorf("diagnose: write output: %w", err)
	}
	if writeErr != nil {
		return writeErr
	}
	if err := <-readErr; err != nil {
		return fmt.Errorf("diagnose: %w", err)
	}
	return nil
}

// diagnoseRecord decodes and diagnoses one record, returning its output
// line: the diagnosis JSON, or an error object naming the line.
func diagnoseRecord(e *diagnose.Engine, lang string, rec record) []byte {
	if rec.err != nil {
		return errorLine(rec.line, rec.err)
	}
	// diagnose.ParseSnapshot accepts and rejects exactly what
	// metrics.DecodeSnapshot does, with the same errors, three times faster
	// on well-formed snapshots.
	s, err := diagnose.ParseSnapshot(rec.data)
	if err != nil {
		return errorLine(rec.line, err)
	}
	out, err := json.Marshal(diagnose.Localize(e.Diagnose(s), lang))
	if err != nil {
		return errorLine(rec.line, fmt.Errorf("encode diagnosis: %w", err))
	}
	return append(out, '\n')
}

func errorLine(line int, err error) []byte {
	out, _ := json.Marshal(map[string]string{"error": fmt.Sprintf("line %d: %v", line, err)})
	return append(out, '\n')
}
