package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteOpenMetrics back-fills the cluster from `from` to `to` at `step`
// and writes every series in the OpenMetrics text format with a timestamp
// per sample, labelled as a Prometheus server scraping the cluster at host
// with PrometheusConfigFor(host, style) would have stored it: job and
// instance added, target labels added, and, in a job that does not honour
// labels, a scraped label that collides with a target label renamed
// exported_<name>. Values are written as the live pages expose them, so a
// scrape that continues after `to` extends the same series.
//
// `promtool tsdb create-blocks-from openmetrics` turns the output into TSDB
// blocks for a real Prometheus. Like Backfill, it leaves the cluster at `to`.
func (c *Cluster) WriteOpenMetrics(w io.Writer, host string, style ScrapeLabels, from, to time.Time, step time.Duration) error {
	if host == "" {
		return errors.New("sim: openmetrics: empty host")
	}
	if step <= 0 {
		return errors.New("sim: openmetrics: step must be positive")
	}
	if to.Before(from) {
		return fmt.Errorf("sim: openmetrics: end %s is before start %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if from.Before(c.now) {
		if c.stepped {
			return fmt.Errorf("sim: openmetrics: start %s is before the cluster's time %s", from.Format(time.RFC3339), c.now.Format(time.RFC3339))
		}
		c.now = from.UTC()
	}
	targets := map[string]scrapeTarget{}
	jobs := map[string]scrapeJob{}
	for _, j := range c.scrapeJobs(style) {
		for _, t := range j.targets {
			targets[t.path], jobs[t.path] = t, j
		}
	}
	bw := bufio.NewWriter(w)
	series := map[*page][]string{} // stored label sets, per page layout
	write := func(path string, p *page, ts string) {
		names := series[p]
		if len(names) != len(p.texts) {
			names = make([]string, len(p.texts))
			for i := range p.texts {
				names[i] = storedSeries(p.labels[i][:p.scraped[i]], jobs[path], targets[path], host)
			}
			series[p] = names
		}
		for i, name := range names {
			bw.WriteString(name)
			bw.WriteByte(' ')
			if p.kind == pageGPU {
				bw.WriteString(dcgmValue(p.labels[i][0].Value, p.vals[i]))
			} else {
				bw.WriteString(omFloat(p.vals[i]))
			}
			bw.WriteByte(' ')
			bw.WriteString(ts)
			bw.WriteByte('\n')
		}
	}
	for t := from; !t.After(to); t = t.Add(step) {
		c.advance(t)
		ts := strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
		for _, m := range c.models {
			for _, in := range m.instances {
				write("/engines/"+in.name+"/metrics", in.page(pageEngine, m.dcgm), ts)
				write("/gpus/"+in.name+"/metrics", in.page(pageGPU, m.dcgm), ts)
			}
		}
		write(GatewayPath, c.gatewayPage(), ts)
	}
	c.advance(to)
	bw.WriteString("# EOF\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("sim: openmetrics: %w", err)
	}
	return nil
}

// storedSeries is the series a scrape stores for the scraped labels
// (first __name__) of one target, in the OpenMetrics text form: the
// target's labels, job and instance added the way Prometheus's scrape
// loop adds them (honor_labels keeps the scraped value; otherwise the
// scraped label is renamed exported_<name>).
func storedSeries(scraped []Label, job scrapeJob, target scrapeTarget, host string) string {
	ls := slices.Clone(scraped[1:])
	add := slices.Concat(target.labels, []Label{{"job", job.name}, {"instance", host}})
	for _, tl := range add {
		i := slices.IndexFunc(ls, func(l Label) bool { return l.Name == tl.Name })
		switch {
		case i < 0:
			ls = append(ls, tl)
		case job.honor:
		default:
			name := "exported_" + tl.Name
			for slices.ContainsFunc(ls, func(l Label) bool { return l.Name == name }) {
				name = "exported_" + name
			}
			ls[i].Name = name
			ls = append(ls, tl)
		}
	}
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteString(scraped[0].Value)
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.Name)
		b.WriteString(`="`)
		b.WriteString(escapeLabel(l.Value))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// omFloat formats a value as OpenMetrics writes numbers.
func omFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
