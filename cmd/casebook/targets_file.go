package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/casebook/casebook/telemetry"
)

// fileSDGroup is one group of a Prometheus file_sd_configs file: host:port
// targets sharing labels. __scheme__ and __metrics_path__ build the URL;
// __scrape_interval__ and __scrape_timeout__ pace the group's targets.
type fileSDGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// readTargetsFile reads scrape targets from a file in Prometheus'
// file_sd_configs JSON format, as a fleet's service discovery writes it.
func readTargetsFile(path string) ([]telemetry.Target, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --targets-file: %v", errUsage, err)
	}
	var groups []fileSDGroup
	if err := json.Unmarshal(b, &groups); err != nil {
		return nil, fmt.Errorf("%w: --targets-file %s: not a file_sd JSON list of {targets, labels}: %v", errUsage, path, err)
	}
	var out []telemetry.Target
	for gi, g := range groups {
		scheme, mpath := "http", "/metrics"
		labels := map[string]string{}
		for k, v := range g.Labels {
			switch k {
			case "__scheme__":
				scheme = v
			case "__metrics_path__":
				mpath = v
			default:
				labels[k] = v
			}
		}
		if scheme != "http" && scheme != "https" {
			return nil, fmt.Errorf("%w: --targets-file %s: group %d: __scheme__ %q is not http or https", errUsage, path, gi+1, scheme)
		}
		if !strings.HasPrefix(mpath, "/") {
			mpath = "/" + mpath
		}
		for _, host := range g.Targets {
			if host == "" || strings.Contains(host, "/") {
				return nil, fmt.Errorf("%w: --targets-file %s: group %d: target %q is not host:port", errUsage, path, gi+1, host)
			}
			l := make(map[string]string, len(labels))
			for k, v := range labels {
				l[k] = v
			}
			out = append(out, telemetry.Target{URL: scheme + "://" + host + mpath, Labels: l})
		}
	}
	return out, nil
}
