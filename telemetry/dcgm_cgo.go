//go:build linux && cgo

package telemetry

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

// newDCGMAPI returns the binding to libdcgm.so.4, loaded at Init.
func newDCGMAPI() dcgmAPI {
	return &realDCGM{groups: map[int]dcgm.GroupHandle{}, fieldGroups: map[int]dcgm.FieldHandle{}}
}

// realDCGM adapts github.com/NVIDIA/go-dcgm to dcgmAPI. go-dcgm's handles
// wrap C types, so they are kept here and the collector sees small ids.
type realDCGM struct {
	groups      map[int]dcgm.GroupHandle
	fieldGroups map[int]dcgm.FieldHandle
	next        int
}

func (r *realDCGM) Init(addr string) (func(), error) {
	var (
		cleanup func()
		err     error
	)
	if addr == "" || addr == "embedded" {
		cleanup, err = dcgm.Init(dcgm.Embedded)
	} else {
		cleanup, err = dcgm.Init(dcgm.Standalone, addr, "0")
	}
	if err != nil {
		return nil, err
	}
	return cleanup, nil
}

func (r *realDCGM) FieldsInit() error {
	if rc := dcgm.FieldsInit(); rc < 0 {
		return fmt.Errorf("dcgmFieldsInit returned %d", rc)
	}
	return nil
}

func (r *realDCGM) GetSupportedDevices() ([]uint, error) { return dcgm.GetSupportedDevices() }

func (r *realDCGM) GetDeviceInfo(gpu uint) (dcgmDevice, error) {
	d, err := dcgm.GetDeviceInfo(gpu)
	if err != nil {
		return dcgmDevice{}, err
	}
	return dcgmDevice{GPU: d.GPU, UUID: d.UUID, PCIBusID: d.PCI.BusID, Model: d.Identifiers.Model, DriverVersion: d.Identifiers.DriverVersion}, nil
}

func (r *realDCGM) GetSupportedMetricGroups(gpu uint) ([]uint16, error) {
	groups, err := dcgm.GetSupportedMetricGroups(gpu)
	if err != nil {
		return nil, err
	}
	var ids []uint16
	for _, g := range groups {
		for _, id := range g.FieldIds {
			ids = append(ids, uint16(id))
		}
	}
	return ids, nil
}

func (r *realDCGM) CreateGroup(name string, gpus []uint) (int, error) {
	g, err := dcgm.CreateGroup(name)
	if err != nil {
		return 0, err
	}
	r.next++
	id := r.next
	r.groups[id] = g
	for _, gpu := range gpus {
		if err := dcgm.AddEntityToGroup(g, dcgm.FE_GPU, gpu); err != nil {
			return id, fmt.Errorf("add GPU %d: %w", gpu, err)
		}
	}
	return id, nil
}

func (r *realDCGM) FieldGroupCreate(name string, fields []uint16) (int, error) {
	ids := make([]dcgm.Short, len(fields))
	for i, f := range fields {
		ids[i] = dcgm.Short(f)
	}
	fg, err := dcgm.FieldGroupCreate(name, ids)
	if err != nil {
		return 0, err
	}
	r.next++
	r.fieldGroups[r.next] = fg
	return r.next, nil
}

func (r *realDCGM) WatchFieldsWithGroupEx(fieldGroup, group int, freq int64, keepAge float64, keepSamples int32) error {
	fg, ok1 := r.fieldGroups[fieldGroup]
	g, ok2 := r.groups[group]
	if !ok1 || !ok2 {
		return fmt.Errorf("unknown group %d or field group %d", group, fieldGroup)
	}
	return dcgm.WatchFieldsWithGroupEx(fg, g, freq, keepAge, keepSamples)
}

func (r *realDCGM) EntityGetLatestValues(gpu uint, fields []uint16) ([]dcgmValue, error) {
	ids := make([]dcgm.Short, len(fields))
	for i, f := range fields {
		ids[i] = dcgm.Short(f)
	}
	vals, err := dcgm.EntityGetLatestValues(dcgm.FE_GPU, gpu, ids)
	if err != nil {
		return nil, err
	}
	out := make([]dcgmValue, 0, len(vals))
	for _, v := range vals {
		dv := dcgmValue{FieldID: uint16(v.FieldID), Type: byte(v.FieldType), Status: v.Status, TS: v.TS}
		switch v.FieldType {
		case dcgm.DCGM_FT_DOUBLE:
			dv.Float = v.Float64()
		case dcgm.DCGM_FT_INT64:
			dv.Int = v.Int64()
		default:
			if strings.HasPrefix(v.String(), "<<<") {
				continue
			}
		}
		out = append(out, dv)
	}
	return out, nil
}

func (r *realDCGM) Cleanup(fieldGroup, group int) {
	fg, okF := r.fieldGroups[fieldGroup]
	g, okG := r.groups[group]
	if okF && okG {
		_ = dcgm.UnwatchFields(fg, g)
	}
	if okF {
		_ = dcgm.FieldGroupDestroy(fg)
		delete(r.fieldGroups, fieldGroup)
	}
	if okG {
		_ = dcgm.DestroyGroup(g)
		delete(r.groups, group)
	}
}
