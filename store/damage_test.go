package store_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/store"
)

// damagedArchive writes an archive with a table large enough to fill
// many pages, then overwrites 16 bytes at the start of a page in the
// middle of the file, as a bad disk or a stray write would.
func damagedArchive(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "casebook.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Backup(context.Background(), path+".v1-20260101T000000Z.bak"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE filler (x BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 2000) INSERT INTO filler SELECT randomblob(1000) FROM n; PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	const page = 4096
	mid := fi.Size() / 2 / page * page
	if _, err := f.WriteAt([]byte("\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad\xbe\xef"), mid); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenDamagedArchive opens an archive with 16 bytes flipped in the
// middle: it opens (so the console can say what is wrong), reports itself
// damaged naming casebook restore and the .bak file, refuses writes with
// ErrDamaged, and still answers reads of undamaged tables.
func TestOpenDamagedArchive(t *testing.T) {
	path := damagedArchive(t)
	before, _ := os.ReadFile(path)
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer st.Close()
	derr := st.Damaged()
	if !errors.Is(derr, store.ErrDamaged) {
		t.Fatalf("Damaged() = %v, want ErrDamaged", derr)
	}
	if !strings.Contains(derr.Error(), "quick_check") && !strings.Contains(derr.Error(), "malformed") {
		t.Errorf("damage report %q does not say what was found", derr)
	}
	for _, want := range []string{"casebook restore", "casebook.db.v1-20260101T000000Z.bak"} {
		if !strings.Contains(derr.Error(), want) {
			t.Errorf("damage report %q lacks %q", derr, want)
		}
	}
	_, err = st.AddUser(context.Background(), "ana", "admin", nil, time.Now())
	if !errors.Is(err, store.ErrDamaged) {
		t.Errorf("write into a damaged archive: %v, want ErrDamaged", err)
	}
	if _, err := st.Users(context.Background()); err != nil {
		t.Errorf("read of an undamaged table: %v", err)
	}
	st.Close()
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the damaged file was written to")
	}
}

// TestHealthyArchiveIsNotDamaged: a fresh and a reopened archive pass the
// check.
func TestHealthyArchiveIsNotDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "casebook.db")
	for range 2 {
		st, err := store.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Damaged(); err != nil {
			t.Errorf("healthy archive: %v", err)
		}
		st.Close()
	}
}
