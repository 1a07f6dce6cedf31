package tracegen

import (
	"context"
	"database/sql"
	"fmt"

	_ "github.com/mattn/go-sqlite3" // SQLite driver
)

// Nsight Systems schema subset: the real table and column names of an
// `nsys export --type sqlite` file, with the columns Casebook and common
// report scripts read.
const nsightSchema = `
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
  isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,
  smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, ctxId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
  srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
  graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
`

// shortNames maps a demangled kernel name to the short name nsys stores
// alongside it (the function name without namespace and arguments).
func shortName(demangled string) string {
	s := demangled
	if len(s) > 5 && s[:5] == "void " {
		s = s[5:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '<' || s[i] == '(' {
			s = s[:i]
			break
		}
	}
	for i := len(s) - 1; i > 0; i-- {
		if s[i] == ':' {
			return s[i+1:]
		}
	}
	return s
}

// WriteNsight creates an Nsight Systems SQLite export at path (which must
// not exist) holding the GPU activities and runtime calls of the simulated
// steps. Timestamps are nanoseconds since the session start.
func WriteNsight(ctx context.Context, path string, o Options) error {
	o = o.withDefaults()
	o.TargetBytes = 0
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=rwc")
	if err != nil {
		return fmt.Errorf("tracegen: nsight: %w", err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("tracegen: nsight: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after commit
	if _, err := tx.ExecContext(ctx, nsightSchema); err != nil {
		return fmt.Errorf("tracegen: nsight schema: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?, '2025-11-24T16:00:00.000Z', '2025-11-24T16:00:00.000Z')`, int64(BaseTimeNanoseconds)); err != nil {
		return fmt.Errorf("tracegen: nsight session: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO TARGET_INFO_GPU VALUES (0, ?, 'NVIDIA H100 80GB HBM3', '0000:18:00.0', 1, 52428800, 84929347584, 3352320000000, 1980000, 132, 0, 'GPU-5f1a9c2e-0000-4000-8000-000000000000', 0, 'GH100', ?, 1)`, o.Device, o.Device); err != nil {
		return fmt.Errorf("tracegen: nsight gpu: %w", err)
	}
	strings := map[string]int64{}
	str := func(s string) (int64, error) {
		if id, ok := strings[s]; ok {
			return id, nil
		}
		id := int64(len(strings) + 1)
		strings[s] = id
		_, err := tx.ExecContext(ctx, `INSERT INTO StringIds (id, value) VALUES (?, ?)`, id, s)
		return id, err
	}
	const globalPid = 288230376151711744 + 4242<<24
	var werr error
	simulate(o, func(r record) bool {
		switch r.rec {
		case recRuntime:
			id, err := str(r.name + "_v7000")
			if err == nil {
				_, err = tx.ExecContext(ctx, `INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, ?, ?, ?, 0, NULL)`,
					r.ts, r.ts+r.dur, globalPid+4242, r.corr, id)
			}
			werr = err
		case recGPU:
			stream := StreamCompute
			if r.gpu.stream != 0 {
				stream = r.gpu.stream
			}
			var graphNode any
			if r.graphID > 0 {
				graphNode = r.graphID<<16 | r.graphNde
			}
			switch r.gpu.kind {
			case kernel:
				var dn, sn int64
				dn, werr = str(r.name)
				if werr == nil {
					sn, werr = str(shortName(r.name))
				}
				if werr == nil {
					_, werr = tx.ExecContext(ctx, `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, 1, NULL, ?, ?, ?, ?, ?, NULL, 0, 0, 128, ?, ?, ?, ?, ?, ?, 0, 49152, 0, 0, ?, 0, ?, 1)`,
						r.ts, r.ts+r.dur, o.Device, stream, r.corr, globalPid, dn, sn,
						r.gpu.grid[0], r.gpu.grid[1], r.gpu.grid[2], r.gpu.block[0], r.gpu.block[1], r.gpu.block[2], r.corr, graphNode)
				}
			case memcpy:
				copyKind := 1 // HtoD
				if r.name[7:11] == "DtoH" {
					copyKind = 2
				}
				_, werr = tx.ExecContext(ctx, `INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, 1, NULL, ?, ?, ?, ?, ?, NULL, 0, 0, ?, 1, ?, 1, 0, NULL, NULL)`,
					r.ts, r.ts+r.dur, o.Device, stream, r.corr, globalPid, r.gpu.bytes, copyKind, o.Device, o.Device)
			case memset:
				_, werr = tx.ExecContext(ctx, `INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, ?, 1, NULL, ?, ?, ?, 0, ?, NULL, 0)`,
					r.ts, r.ts+r.dur, o.Device, stream, r.corr, globalPid, r.gpu.bytes)
			}
		}
		return werr == nil
	})
	if werr != nil {
		return fmt.Errorf("tracegen: nsight insert: %w", werr)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("tracegen: nsight commit: %w", err)
	}
	return nil
}
