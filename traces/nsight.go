package traces

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	_ "github.com/mattn/go-sqlite3" // the SQLite driver for Nsight exports
)

// sqliteMagic is the first 16 bytes of every SQLite 3 database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// memcpyKinds names CUPTI_ACTIVITY_MEMCPY_KIND values the way the PyTorch
// profiler names its memcpy events.
var memcpyKinds = map[int64]string{
	1: "Memcpy HtoD", 2: "Memcpy DtoH", 3: "Memcpy HtoA", 4: "Memcpy AtoH",
	5: "Memcpy AtoA", 6: "Memcpy AtoD", 7: "Memcpy DtoA", 8: "Memcpy DtoD",
	9: "Memcpy HtoH", 10: "Memcpy PtoP",
}

// ParseNsight reads an Nsight Systems SQLite export (nsys export --type
// sqlite) at path, read-only. It needs the CUPTI_ACTIVITY_KIND_KERNEL table
// and reads CUPTI_ACTIVITY_KIND_MEMCPY and CUPTI_ACTIVITY_KIND_MEMSET when
// they exist (nsys creates tables lazily). Kernel names are resolved
// through StringIds, preferring demangledName over shortName.
func ParseNsight(ctx context.Context, path string, opts Options) (*Trace, error) {
	opts = opts.withDefaults()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("traces: nsight %s: %w", path, err)
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return nil, fmt.Errorf("traces: nsight open: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	t, err := readNsight(ctx, db, opts)
	if err != nil {
		return nil, fmt.Errorf("traces: nsight: %w", err)
	}
	return t, nil
}

// parseNsightStream spools a SQLite export from r into a temporary file
// (SQLite cannot read a stream) and parses it.
func parseNsightStream(ctx context.Context, r io.Reader, opts Options) (*Trace, error) {
	f, err := os.CreateTemp(opts.TempDir, "casebook-nsys-*.sqlite")
	if err != nil {
		return nil, fmt.Errorf("traces: nsight spool: %w", err)
	}
	name := f.Name()
	defer os.Remove(name)
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		if errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("traces: nsight: %w (limit %d bytes)", ErrTooLarge, opts.MaxBytes)
		}
		return nil, fmt.Errorf("traces: nsight spool: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("traces: nsight spool: %w", err)
	}
	return ParseNsight(ctx, name, opts)
}

func readNsight(ctx context.Context, db *sql.DB, opts Options) (*Trace, error) {
	tables, err := nsightTables(ctx, db)
	if err != nil {
		return nil, err
	}
	if !tables["CUPTI_ACTIVITY_KIND_KERNEL"] {
		return nil, fmt.Errorf("%w: no CUPTI_ACTIVITY_KIND_KERNEL table (was the profile taken with --trace=cuda and did kernels run?)", ErrFormat)
	}
	if !tables["StringIds"] {
		return nil, fmt.Errorf("%w: no StringIds table", ErrFormat)
	}
	b := newBuilder(FormatNsight)
	if tables["TARGET_INFO_GPU"] {
		// Best effort: the column set of this table varies across nsys
		// releases, and device names are decoration only.
		_ = nsightDevices(ctx, db, b)
	}

	const kernels = `
		SELECT k.start, k.end, k.deviceId, k.streamId,
		       COALESCE(d.value, s.value, '')
		FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
		LEFT JOIN StringIds AS d ON d.id = k.demangledName
		LEFT JOIN StringIds AS s ON s.id = k.shortName`
	if err := nsightRows(ctx, db, b, opts, kernels, func([]byte) (Kind, string) { return KindKernel, "" }); err != nil {
		return nil, fmt.Errorf("kernels: %w", err)
	}
	if tables["CUPTI_ACTIVITY_KIND_MEMCPY"] {
		const memcpy = `SELECT start, end, deviceId, streamId, copyKind FROM CUPTI_ACTIVITY_KIND_MEMCPY`
		if err := nsightRows(ctx, db, b, opts, memcpy, func(col []byte) (Kind, string) {
			k, _ := strconv.ParseInt(string(col), 10, 64)
			if n, ok := memcpyKinds[k]; ok {
				return KindMemcpy, n
			}
			return KindMemcpy, "Memcpy"
		}); err != nil {
			return nil, fmt.Errorf("memcpy: %w", err)
		}
	}
	if tables["CUPTI_ACTIVITY_KIND_MEMSET"] {
		const memset = `SELECT start, end, deviceId, streamId, 0 FROM CUPTI_ACTIVITY_KIND_MEMSET`
		if err := nsightRows(ctx, db, b, opts, memset, func([]byte) (Kind, string) { return KindMemset, "Memset (Device)" }); err != nil {
			return nil, fmt.Errorf("memset: %w", err)
		}
	}
	return b.finish()
}

func nsightTables(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type IN ('table', 'view')`)
	if err != nil {
		return nil, fmt.Errorf("%w: read sqlite_master: %w", ErrFormat, err)
	}
	defer rows.Close()
	out := make(map[string]bool)
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("%w: read sqlite_master: %w", ErrFormat, err)
		}
		out[name] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: read sqlite_master: %w", ErrFormat, err)
	}
	return out, nil
}

func nsightDevices(ctx context.Context, db *sql.DB, b *builder) error {
	rows, err := db.QueryContext(ctx, `SELECT id, name FROM TARGET_INFO_GPU ORDER BY id LIMIT 1024`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var name sql.NullString
		if err := rows.Scan(&id, &name); err != nil {
			return err
		}
		b.t.Devices = append(b.t.Devices, Device{ID: int(id), Name: truncate(name.String, 200)})
	}
	return rows.Err()
}

// nsightRows reads activity rows (start, end, deviceId, streamId, and a
// name or a memcpy kind) into b. kind maps the fifth column to the
// activity kind and a name; an empty name means the column is the name.
func nsightRows(ctx context.Context, db *sql.DB, b *builder, opts Options, query string, kind func(col []byte) (Kind, string)) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	defer rows.Close()
	for rows.Next() {
		if b.t.Events >= opts.MaxEvents {
			return fmt.Errorf("%w: more than %d rows", ErrLimit, opts.MaxEvents)
		}
		var start, end, device, stream sql.NullInt64
		var col sql.RawBytes
		if err := rows.Scan(&start, &end, &device, &stream, &col); err != nil {
			return fmt.Errorf("%w: row %d: %w", ErrFormat, b.t.Events, err)
		}
		if !start.Valid || !end.Valid || end.Int64 < start.Int64 || start.Int64 < 0 || end.Int64 > maxNanos {
			return fmt.Errorf("%w: row %d: start %v end %v is not an interval", ErrFormat, b.t.Events, start.Int64, end.Int64)
		}
		k, name := kind(col)
		nameBytes := []byte(name)
		if name == "" {
			if len(col) > opts.MaxStringLen {
				return fmt.Errorf("%w: row %d: name longer than %d bytes", ErrLimit, b.t.Events, opts.MaxStringLen)
			}
			nameBytes = col
			if len(col) == 0 {
				nameBytes = []byte("kernel")
			}
		}
		b.add(k, nameBytes, start.Int64, end.Int64, device.Int64, stream.Int64)
		b.t.Events++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return nil
}
