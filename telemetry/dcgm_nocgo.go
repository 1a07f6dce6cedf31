//go:build !(linux && cgo)

package telemetry

import "errors"

// newDCGMAPI returns the DCGM binding; without linux and cgo there is none.
func newDCGMAPI() dcgmAPI { return noDCGM{} }

type noDCGM struct{}

var errNoDCGM = errors.New("DCGM support needs a linux build with cgo")

func (noDCGM) Init(string) (func(), error)                                  { return nil, errNoDCGM }
func (noDCGM) FieldsInit() error                                            { return errNoDCGM }
func (noDCGM) GetSupportedDevices() ([]uint, error)                         { return nil, errNoDCGM }
func (noDCGM) GetDeviceInfo(uint) (dcgmDevice, error)                       { return dcgmDevice{}, errNoDCGM }
func (noDCGM) GetSupportedMetricGroups(uint) ([]uint16, error)              { return nil, errNoDCGM }
func (noDCGM) CreateGroup(string, []uint) (int, error)                      { return 0, errNoDCGM }
func (noDCGM) FieldGroupCreate(string, []uint16) (int, error)               { return 0, errNoDCGM }
func (noDCGM) WatchFieldsWithGroupEx(int, int, int64, float64, int32) error { return errNoDCGM }
func (noDCGM) EntityGetLatestValues(uint, []uint16) ([]dcgmValue, error)    { return nil, errNoDCGM }
func (noDCGM) Cleanup(int, int)                                             {}
