package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/casebook/casebook/store"
)

func backupCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	data := fs.String("data", "./data", "data directory of the archive to copy (it may be serving)")
	pos, err := parseWithArgs(fs, args, env, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: backup FILE [--data DIR]", errUsage)
	}
	began := time.Now()
	if err := store.BackupFile(ctx, filepath.Join(*data, "casebook.db"), pos[0]); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fi, err := os.Stat(pos[0])
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "backup: %s (%d bytes) in %s\n", pos[0], fi.Size(), time.Since(began).Round(time.Millisecond))
	return nil
}

func restoreCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	data := fs.String("data", "./data", "data directory to restore into; no casebook may be serving it")
	force := fs.Bool("force", false, "replace an existing archive (it is kept beside as casebook.db.replaced-TIME)")
	pos, err := parseWithArgs(fs, args, env, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: restore FILE [--data DIR] [--force]", errUsage)
	}
	src := pos[0]
	if err := store.CheckArchive(ctx, src); err != nil {
		return fmt.Errorf("restore: %s: %w", src, err)
	}
	if err := os.MkdirAll(*data, 0o750); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	release, err := lockData(*data)
	if err != nil {
		return fmt.Errorf("restore: %w; stop it first", err)
	}
	defer release()
	dst := filepath.Join(*data, "casebook.db")
	if _, err := os.Stat(dst); err == nil {
		if !*force {
			return fmt.Errorf("%w: restore: %s exists; pass --force to replace it", errUsage, dst)
		}
		kept := dst + ".replaced-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.Rename(dst, kept); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		fmt.Fprintf(stdout, "restore: the archive it replaces is kept as %s\n", kept)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restore: %w", err)
	}
	// The replaced archive's write-ahead log must not be applied to the
	// restored file.
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(dst + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("restore: %w", err)
		}
	}
	if err := copyFile(src, dst+".restoring"); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := os.Rename(dst+".restoring", dst); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	st, err := store.Open(ctx, dst) // applies newer migrations, after a backup of its own
	if err != nil {
		return fmt.Errorf("restore: open the restored archive: %w", err)
	}
	v, _ := st.SchemaVersion(ctx)
	st.Close()
	fmt.Fprintf(stdout, "restore: %s restored into %s (schema version %d)\n", src, dst, v)
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
