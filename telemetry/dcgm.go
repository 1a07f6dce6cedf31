package telemetry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// dcgmField is one DCGM field the collector watches, written under
// dcgm-exporter's metric name so the catalog's PromQL works unchanged.
type dcgmField struct {
	ID   uint16
	Name string
	Prof bool // a profiling (DCP) field: watched only where the GPU supports it
}

// dcgmFields are the GPU fields the catalog reads, plus GPU utilisation as
// the fallback for SM activity on GPUs without profiling.
var dcgmFields = []dcgmField{
	{100, "DCGM_FI_DEV_SM_CLOCK", false},
	{101, "DCGM_FI_DEV_MEM_CLOCK", false},
	{150, "DCGM_FI_DEV_GPU_TEMP", false},
	{155, "DCGM_FI_DEV_POWER_USAGE", false},
	{203, "DCGM_FI_DEV_GPU_UTIL", false},
	{251, "DCGM_FI_DEV_FB_FREE", false},
	{252, "DCGM_FI_DEV_FB_USED", false},
	{1002, "DCGM_FI_PROF_SM_ACTIVE", true},
	{1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", true},
	{1005, "DCGM_FI_PROF_DRAM_ACTIVE", true},
}

// DCGM field types and blank sentinels (dcgm_fields.h). A blank value means
// "no data" and is skipped, as dcgm-exporter does.
const (
	dcgmTypeDouble   = 'd'
	dcgmTypeInt64    = 'i'
	dcgmInt64Blank   = int64(9223372036854775792)
	dcgmInt32Blank   = int64(2147483632)
	dcgmFloat64Blank = 140737488355328.0
)

// dcgmInterval is how often GPU fields are sampled and written.
const dcgmInterval = time.Second

// dcgmDevice is the identity of one GPU, for dcgm-exporter's labels.
type dcgmDevice struct {
	GPU           uint
	UUID          string
	PCIBusID      string
	Model         string
	DriverVersion string
}

// dcgmValue is one field value of one GPU.
type dcgmValue struct {
	FieldID uint16
	Type    byte // 'd' double, 'i' int64, others ignored
	Int     int64
	Float   float64
	Status  int   // non-zero: the value is invalid
	TS      int64 // microseconds since the epoch
}

// dcgmAPI is the part of go-dcgm the collector uses. The real one binds to
// libdcgm.so.4 (linux and cgo builds); tests use a fake with recorded values.
type dcgmAPI interface {
	// Init starts DCGM embedded (addr "embedded") or connects to the
	// nv-hostengine at addr (host:port). It returns the cleanup to call
	// when done.
	Init(addr string) (cleanup func(), err error)
	FieldsInit() error
	GetSupportedDevices() ([]uint, error)
	GetDeviceInfo(gpu uint) (dcgmDevice, error)
	// GetSupportedMetricGroups returns the profiling field ids the GPU
	// supports; an error means no profiling.
	GetSupportedMetricGroups(gpu uint) ([]uint16, error)
	CreateGroup(name string, gpus []uint) (group int, err error)
	FieldGroupCreate(name string, fields []uint16) (fieldGroup int, err error)
	WatchFieldsWithGroupEx(fieldGroup, group int, updateFreqMicros int64, maxKeepAgeSeconds float64, maxKeepSamples int32) error
	EntityGetLatestValues(gpu uint, fields []uint16) ([]dcgmValue, error)
	// Cleanup unwatches and destroys the groups and shuts DCGM down.
	Cleanup(fieldGroup, group int)
}

// dcgmCollector samples DCGM into the TSDB.
type dcgmCollector struct {
	api        dcgmAPI
	db         storage.Appendable
	name       string
	fields     []uint16
	names      map[uint16]string
	gpus       []uint
	series     map[uint64]*backfillRef // gpu<<16 | field -> series
	gpuLabels  map[uint]labels.Labels
	fieldGroup int
	group      int
	cleanup    func()
}

// dcgmSourceName is the status name of the DCGM collector.
const dcgmSourceName = "DCGM"

// startDCGM initialises DCGM and starts sampling. Failure is not fatal: the
// console runs on without GPU data and Status says why.
func (t *Telemetry) startDCGM(ctx context.Context, api dcgmAPI) {
	c, err := newDCGMCollector(api, t.opts.DCGM, t.app)
	if err != nil {
		t.status.fail(dcgmSourceName, err)
		return
	}
	t.dcgm = c
	t.status.ok(dcgmSourceName)
	t.meter.mu.Lock()
	t.meter.st.DCGM = true
	t.meter.mu.Unlock()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.runDCGM(ctx, c, dcgmInterval, time.Now)
	}()
}

// runDCGM collects at every whole interval (a second) until ctx is done.
// A collection still running when the next slot comes skips that slot
// (counted in IngestStats) rather than letting collections pile up.
func (t *Telemetry) runDCGM(ctx context.Context, c *dcgmCollector, interval time.Duration, now func() time.Time) {
	slot := now().Truncate(interval).Add(interval)
	timer := time.NewTimer(slot.Sub(now()))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		// Whole-second timestamps compress to under 2 bytes a sample;
		// the timer's jitter of a few ms doubles that.
		if err := c.collect(ctx, slot); err != nil {
			t.status.fail(dcgmSourceName, err)
		} else {
			t.status.ok(dcgmSourceName)
		}
		end := now()
		var missed int
		slot, missed = nextSlot(slot, end, interval)
		t.meter.collected(missed, end)
		timer.Reset(slot.Sub(end))
	}
}

func newDCGMCollector(api dcgmAPI, addr string, db storage.Appendable) (*dcgmCollector, error) {
	cleanup, err := api.Init(addr)
	if err != nil {
		if strings.Contains(err.Error(), "libdcgm.so.4 not found") {
			return nil, errors.New("DCGM: libdcgm.so.4 not found (install DCGM 4.x or run dcgm-exporter)")
		}
		return nil, fmt.Errorf("DCGM: init %s: %w", addr, err)
	}
	c := &dcgmCollector{api: api, db: db, cleanup: cleanup, names: make(map[uint16]string),
		series: make(map[uint64]*backfillRef), gpuLabels: make(map[uint]labels.Labels), group: -1, fieldGroup: -1}
	fail := func(err error) (*dcgmCollector, error) {
		c.close()
		return nil, err
	}
	if err := api.FieldsInit(); err != nil {
		return fail(fmt.Errorf("DCGM: fields init: %w", err))
	}
	gpus, err := api.GetSupportedDevices()
	if err != nil {
		return fail(fmt.Errorf("DCGM: list GPUs: %w", err))
	}
	if len(gpus) == 0 {
		return fail(errors.New("DCGM: no supported GPUs found"))
	}
	c.gpus = gpus
	host := hostname()
	for _, g := range gpus {
		d, err := api.GetDeviceInfo(g)
		if err != nil {
			return fail(fmt.Errorf("DCGM: GPU %d info: %w", g, err))
		}
		b := labels.NewBuilder(labels.EmptyLabels())
		b.Set("gpu", strconv.FormatUint(uint64(g), 10))
		b.Set("UUID", d.UUID)
		b.Set("pci_bus_id", d.PCIBusID)
		b.Set("device", "nvidia"+strconv.FormatUint(uint64(g), 10))
		b.Set("modelName", d.Model)
		b.Set("Hostname", host)
		b.Set("DCGM_FI_DRIVER_VERSION", d.DriverVersion)
		b.Set("job", "dcgm")
		c.gpuLabels[g] = b.Labels()
	}
	// Profiling fields only where GPU 0 lists them, as dcgm-exporter does.
	prof := map[uint16]bool{}
	if ids, err := api.GetSupportedMetricGroups(gpus[0]); err == nil {
		for _, id := range ids {
			prof[id] = true
		}
	}
	for _, f := range dcgmFields {
		if f.Prof && !prof[f.ID] {
			continue
		}
		c.fields = append(c.fields, f.ID)
		c.names[f.ID] = f.Name
	}
	name := fmt.Sprintf("casebook-%d", time.Now().UnixNano())
	if c.group, err = api.CreateGroup(name, gpus); err != nil {
		return fail(fmt.Errorf("DCGM: create group: %w", err))
	}
	if c.fieldGroup, err = api.FieldGroupCreate(name, c.fields); err != nil {
		return fail(fmt.Errorf("DCGM: create field group: %w", err))
	}
	if err := api.WatchFieldsWithGroupEx(c.fieldGroup, c.group, dcgmInterval.Microseconds(), 60, 0); err != nil {
		return fail(fmt.Errorf("DCGM: watch fields: %w", err))
	}
	return c, nil
}

// collect reads the latest value of every field of every GPU and appends
// them at now. Blank sentinels and invalid values are skipped.
func (c *dcgmCollector) collect(ctx context.Context, now time.Time) error {
	app := c.db.Appender(ctx)
	ts := now.UnixMilli()
	for _, g := range c.gpus {
		vals, err := c.api.EntityGetLatestValues(g, c.fields)
		if err != nil {
			_ = app.Rollback()
			return fmt.Errorf("DCGM: read GPU %d: %w", g, err)
		}
		for _, v := range vals {
			x, ok := dcgmFloat(v)
			if !ok {
				continue
			}
			name, ok := c.names[v.FieldID]
			if !ok {
				continue
			}
			key := uint64(g)<<16 | uint64(v.FieldID)
			s, ok := c.series[key]
			if !ok {
				b := labels.NewBuilder(c.gpuLabels[g])
				b.Set(labels.MetricName, name)
				s = &backfillRef{lset: b.Labels()}
				c.series[key] = s
			}
			ref, err := app.Append(s.ref, s.lset, ts, x)
			if err != nil {
				if errors.Is(err, storage.ErrOutOfOrderSample) || errors.Is(err, storage.ErrDuplicateSampleForTimestamp) {
					continue
				}
				_ = app.Rollback()
				return fmt.Errorf("DCGM: append %s: %w", name, err)
			}
			s.ref = ref
		}
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("DCGM: commit: %w", err)
	}
	return nil
}

// dcgmFloat converts a field value, reporting false for blanks, invalid
// values and non-numeric types.
func dcgmFloat(v dcgmValue) (float64, bool) {
	if v.Status != 0 {
		return 0, false
	}
	switch v.Type {
	case dcgmTypeDouble:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) || v.Float >= dcgmFloat64Blank {
			return 0, false
		}
		return v.Float, true
	case dcgmTypeInt64:
		if v.Int >= dcgmInt64Blank || (v.Int >= dcgmInt32Blank && v.Int <= dcgmInt32Blank+3) {
			return 0, false
		}
		return float64(v.Int), true
	}
	return 0, false
}

func (c *dcgmCollector) close() {
	if c.group >= 0 || c.fieldGroup >= 0 {
		c.api.Cleanup(c.fieldGroup, c.group)
		c.group, c.fieldGroup = -1, -1
	}
	if c.cleanup != nil {
		c.cleanup()
		c.cleanup = nil
	}
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	return h
}
