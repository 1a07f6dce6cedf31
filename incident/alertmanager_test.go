package incident_test

import (
	"strings"
	"testing"

	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/incident/incidenttest"
)

func TestDecodeAlertmanager(t *testing.T) {
	good := incidenttest.AlertBody("firing", "a1b2c3d4e5f60718", "llama-70b", "llama-70b-1", "TTFT high", `,"someNewKey":[1,2,3]`)
	tests := []struct {
		name    string
		body    string
		wantErr string
	}{
		{"reference message with unknown keys", good, ""},
		{"empty", "", "not valid JSON"},
		{"array", "[]", "should be"},
		{"version missing", `{"alerts":[]}`, "version"},
		{"version 3", strings.Replace(good, `"version":"4"`, `"version":"3"`, 1), "version"},
		{"no fingerprint", strings.Replace(good, `"fingerprint":"a1b2c3d4e5f60718"`, `"fingerprint":""`, 1), "fingerprint"},
		{"no startsAt", strings.Replace(good, `"startsAt":"2026-11-30T04:52:00.123456789Z",`, ``, 1), "startsAt"},
		{"bad time", strings.Replace(good, `"startsAt":"2026-11-30T04:52:00.123456789Z"`, `"startsAt":"yesterday"`, 1), "JSON"},
		{"year 1", strings.Replace(good, `"startsAt":"2026-11-30T04:52:00.123456789Z"`, `"startsAt":"0001-01-01T00:00:01Z"`, 1), "alerts[0].startsAt 0001-01-01T00:00:01Z is outside the years"},
		{"year 9999", strings.Replace(good, `"startsAt":"2026-11-30T04:52:00.123456789Z"`, `"startsAt":"9999-12-31T23:59:59Z"`, 1), "alerts[0].startsAt 9999-12-31T23:59:59Z is outside the years"},
		{"negative truncatedAlerts", strings.Replace(good, `"truncatedAlerts":0`, `"truncatedAlerts":-3`, 1), "truncatedAlerts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := incident.DecodeAlertmanager([]byte(tc.body))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if len(m.Alerts) != 1 || m.Alerts[0].Labels["model_name"] != "llama-70b" || m.Alerts[0].StartsAt.Nanosecond() != 123456789 {
					t.Errorf("decoded %+v", m)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func FuzzDecodeAlertmanager(f *testing.F) {
	f.Add([]byte(incidenttest.AlertBody("firing", "a1b2c3d4e5f60718", "llama-70b", "llama-70b-1", "TTFT high", "")))
	f.Add([]byte(incidenttest.AlertBody("resolved", "x", "", "", "", `,"k":{}`)))
	f.Add([]byte(`{"version":"4","alerts":[{}]}`))
	f.Add([]byte(`{"version":"4","alerts":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := incident.DecodeAlertmanager(body)
		if err != nil {
			return
		}
		// Whatever decodes must satisfy the checks the handler relies on.
		if m.Version != "4" || len(m.Alerts) == 0 || m.TruncatedAlerts < 0 {
			t.Fatalf("accepted message breaks the envelope rules: %+v", m)
		}
		for _, a := range m.Alerts {
			if (a.Status != "firing" && a.Status != "resolved") || a.Fingerprint == "" || len(a.Fingerprint) > 64 || a.StartsAt.IsZero() ||
				a.StartsAt.Year() < 1678 || a.StartsAt.Year() > 2261 {
				t.Fatalf("accepted alert breaks the rules: %+v", a)
			}
		}
	})
}

func TestDecodeAlertmanagerRefusesDeepNesting(t *testing.T) {
	deep := `{"version":"4","alerts":[{"labels":{"x":` + strings.Repeat(`[`, 50) + strings.Repeat(`]`, 50) + `}}]}`
	_, err := incident.DecodeAlertmanager([]byte(deep))
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 8 levels") {
		t.Fatalf("deeply nested body: %v, want the nesting limit named", err)
	}
}
