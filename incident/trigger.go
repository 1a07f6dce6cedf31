package incident

import (
	"encoding/json"
	"fmt"
)

// TriggerDetail is what the console reads back from an incident's stored
// trigger detail: the alert's name and the alerts of its webhook message
// that opened nothing, or the forecast bands the detector's metrics left
// (Metric alone in detector incidents stored before the bands were).
// Keys it does not name are ignored.
type TriggerDetail struct {
	AlertName       string     `json:"alertname"`
	DroppedAlerts   int        `json:"dropped_alerts"`
	TruncatedAlerts int        `json:"truncated_alerts"`
	Metric          string     `json:"metric"`
	Bands           []BandExit `json:"metrics"`
}

// BandExit is one metric outside its forecast band when the detector
// opened the incident: how far beyond the band, in the metric's unit and
// in standard errors (0 when the series had no spread to measure it by).
type BandExit struct {
	Metric    string  `json:"metric"`
	Value     float64 `json:"value"`
	Lower     float64 `json:"lower"`
	Upper     float64 `json:"upper"`
	Outside   float64 `json:"outside"`
	OutsideSE float64 `json:"outside_se"`
}

// DecodeTriggerDetail reads an incident's trigger detail; empty means
// none. A detail that is not a JSON object of these keys is an error.
func DecodeTriggerDetail(raw json.RawMessage) (TriggerDetail, error) {
	var d TriggerDetail
	if len(raw) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return TriggerDetail{}, fmt.Errorf("incident: decode trigger detail: %w", err)
	}
	return d, nil
}
