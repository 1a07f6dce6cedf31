package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// fakeDCGM replays recorded go-dcgm answers for two H100s.
type fakeDCGM struct {
	initErr   error
	profIDs   []uint16
	profErr   error
	values    map[uint][]dcgmValue
	watched   []uint16
	freq      int64
	cleanedUp bool
	shutdown  bool
}

func (f *fakeDCGM) Init(string) (func(), error) {
	if f.initErr != nil {
		return nil, f.initErr
	}
	return func() { f.shutdown = true }, nil
}
func (f *fakeDCGM) FieldsInit() error                    { return nil }
func (f *fakeDCGM) GetSupportedDevices() ([]uint, error) { return []uint{0, 1}, nil }
func (f *fakeDCGM) GetDeviceInfo(gpu uint) (dcgmDevice, error) {
	return dcgmDevice{GPU: gpu, UUID: "GPU-5fd4c6a1-000" + string(rune('0'+gpu)), PCIBusID: "00000000:1" + string(rune('8'+gpu)) + ":00.0",
		Model: "NVIDIA H100 80GB HBM3", DriverVersion: "560.35.03"}, nil
}
func (f *fakeDCGM) GetSupportedMetricGroups(uint) ([]uint16, error) { return f.profIDs, f.profErr }
func (f *fakeDCGM) CreateGroup(string, []uint) (int, error)         { return 1, nil }
func (f *fakeDCGM) FieldGroupCreate(_ string, fields []uint16) (int, error) {
	f.watched = fields
	return 2, nil
}
func (f *fakeDCGM) WatchFieldsWithGroupEx(_, _ int, freq int64, _ float64, _ int32) error {
	f.freq = freq
	return nil
}
func (f *fakeDCGM) EntityGetLatestValues(gpu uint, fields []uint16) ([]dcgmValue, error) {
	var out []dcgmValue
	for _, v := range f.values[gpu] {
		for _, id := range fields {
			if v.FieldID == id {
				out = append(out, v)
			}
		}
	}
	return out, nil
}
func (f *fakeDCGM) Cleanup(int, int) { f.cleanedUp = true }

// recordedValues are field values as go-dcgm returned them on an H100 node,
// including the blank sentinels DCGM uses for "no data".
func recordedValues() map[uint][]dcgmValue {
	d := func(id uint16, x float64) dcgmValue { return dcgmValue{FieldID: id, Type: dcgmTypeDouble, Float: x} }
	i := func(id uint16, x int64) dcgmValue { return dcgmValue{FieldID: id, Type: dcgmTypeInt64, Int: x} }
	return map[uint][]dcgmValue{
		0: {i(100, 1980), i(101, 2619), i(150, 61), d(155, 520.25), i(203, 87), i(251, 20000), i(252, 61000),
			d(1002, 0.7312), d(1004, 0.41), d(1005, 0.65)},
		1: {i(100, 1755), i(101, 2619), i(150, 83), d(155, 699.5),
			i(203, dcgmInt64Blank+2), // not supported
			i(251, 20000), i(252, 61000),
			d(1002, dcgmFloat64Blank),                                    // blank
			{FieldID: 1005, Type: dcgmTypeDouble, Float: 0.6, Status: 1}, // invalid
		},
	}
}

func TestDCGMCollector(t *testing.T) {
	db := openTestDB(t)
	fake := &fakeDCGM{profIDs: []uint16{1001, 1002, 1005}, values: recordedValues()}
	c, err := newDCGMCollector(fake, "embedded", db)
	if err != nil {
		t.Fatal(err)
	}
	// Tensor activity (1004) is not in the supported profiling groups.
	for _, id := range fake.watched {
		if id == 1004 {
			t.Fatal("watching a profiling field the GPU does not support")
		}
	}
	if fake.freq != time.Second.Microseconds() {
		t.Fatalf("update frequency %d µs, want 1 s", fake.freq)
	}
	t0 := time.Now().Add(-2 * time.Second).Truncate(time.Second)
	for k := range 2 {
		if err := c.collect(context.Background(), t0.Add(time.Duration(k)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	q := NewEmbeddedQuerier(db, nil)
	at := t0.Add(time.Second)
	tests := []struct {
		expr string
		want float64
	}{
		{`DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-5fd4c6a1-0001",modelName="NVIDIA H100 80GB HBM3",DCGM_FI_DRIVER_VERSION="560.35.03",device="nvidia1"}`, 1755},
		{`max(DCGM_FI_DEV_GPU_TEMP)`, 83},
		{`DCGM_FI_DEV_POWER_USAGE{gpu="0"}`, 520.25},
		{`count(DCGM_FI_DEV_GPU_UTIL)`, 1},     // GPU 1's sentinel skipped
		{`count(DCGM_FI_PROF_SM_ACTIVE)`, 1},   // GPU 1's blank skipped
		{`count(DCGM_FI_PROF_DRAM_ACTIVE)`, 1}, // GPU 1's invalid value skipped
		{`count(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)`, math.NaN()},
	}
	for _, tc := range tests {
		got := instant(t, q, tc.expr, at)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && got != tc.want) {
			t.Errorf("%s = %g, want %g", tc.expr, got, tc.want)
		}
	}
	// The catalog's PromQL reads the collector's series unchanged.
	for _, id := range []string{metrics.SMClock, metrics.GPUTemp, metrics.SMUtil, metrics.GPUMemUsedFrac} {
		m, _ := metrics.Lookup(id)
		if v := instant(t, q, m.Query(metrics.Selectors{}, time.Minute), at); math.IsNaN(v) {
			t.Errorf("catalog %s has no value over collected DCGM series", id)
		}
	}
	c.close()
	if !fake.cleanedUp || !fake.shutdown {
		t.Fatal("close did not unwatch and shut DCGM down")
	}
}

func TestDCGMUnavailable(t *testing.T) {
	tests := []struct {
		name    string
		initErr error
		want    string
	}{
		{"library missing", errors.New("libdcgm.so.4 not found"), "DCGM: libdcgm.so.4 not found (install DCGM 4.x or run dcgm-exporter)"},
		{"hostengine down", errors.New("error connecting to nv-hostengine: Host engine connection invalid/disconnected"), "DCGM: init gpu-node:5555: error connecting to nv-hostengine"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logCounter{}
			tel := &Telemetry{opts: Options{DCGM: "gpu-node:5555"}, db: openTestDB(t), status: newStatusBoard(slog.New(logs))}
			tel.startDCGM(context.Background(), &fakeDCGM{initErr: tc.initErr})
			st := tel.Status()
			if len(st) != 1 || st[0].Name != dcgmSourceName || st[0].OK || !strings.HasPrefix(st[0].Err, tc.want) {
				t.Fatalf("status = %+v, want failing %q", st, tc.want)
			}
			if n := len(logs.records); n != 1 {
				t.Fatalf("%d log records, want exactly 1", n)
			}
		})
	}
}

// TestOpenWithDCGM opens the embedded mode with the real DCGM binding. On a
// machine without libdcgm.so.4 Open must still succeed and say why there is
// no GPU data; on a GPU node with DCGM the source is up.
func TestOpenWithDCGM(t *testing.T) {
	tel, err := Open(context.Background(), Options{DataDir: t.TempDir(), DCGM: "embedded"})
	if err != nil {
		t.Fatalf("Open failed because of DCGM: %v", err)
	}
	defer tel.Close()
	var found bool
	for _, s := range tel.Status() {
		if s.Name != dcgmSourceName {
			continue
		}
		found = true
		if !s.OK && !strings.HasPrefix(s.Err, "DCGM") {
			t.Fatalf("DCGM failure %q does not say it is DCGM", s.Err)
		}
		t.Logf("DCGM status: ok=%v err=%q", s.OK, s.Err)
	}
	if !found {
		t.Fatal("no DCGM source in Status")
	}
}
