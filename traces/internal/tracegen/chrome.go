package tracegen

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// BaseTimeNanoseconds is the epoch base written into generated Chrome
// traces (2025-11-24T16:00:00Z); event ts values are relative to it, as
// recent kineto writes them.
const BaseTimeNanoseconds = 1764000000000000000

const (
	cpuPid = 4242
	cpuTid = 4242
)

// WriteChrome writes a PyTorch profiler Chrome trace (kineto JSON) to w and
// returns the number of bytes written.
func WriteChrome(w io.Writer, o Options) (int64, error) {
	o = o.withDefaults()
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 256<<10)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`{
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": %d, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 84929347584,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    }
  ],
  "cupti_version": 24,
  "cuda_runtime_version": 12080,
  "cuda_driver_version": 12080,
`, o.Device)
	if o.TP > 1 {
		p(`  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d, "pg_count": 2, "pg_config": [], "nccl_version": "2.26.2"},
`, o.Device, o.TP)
	}
	p(`  "record_shapes": 0,
  "with_stack": 0,
  "trace_id": "%016X",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": %d,
  "traceEvents": [
`, uint64(o.Seed)*2654435761+1, BaseTimeNanoseconds)
	p(`  {"name": "process_name", "ph": "M", "ts": 0.000, "pid": %d, "tid": 0, "args": {"name": "python3"}},
  {"name": "thread_name", "ph": "M", "ts": 0.000, "pid": %d, "tid": %d, "args": {"name": "thread %d (python3)"}},
  {"name": "process_name", "ph": "M", "ts": 0.000, "pid": %d, "tid": 0, "args": {"name": "GPU %d"}},
  {"name": "process_labels", "ph": "M", "ts": 0.000, "pid": %d, "tid": 0, "args": {"labels": "GPU %d"}},
  {"name": "thread_name", "ph": "M", "ts": 0.000, "pid": %d, "tid": %d, "args": {"name": "stream %d "}},
  {"name": "thread_name", "ph": "M", "ts": 0.000, "pid": %d, "tid": %d, "args": {"name": "stream %d "}}`,
		cpuPid, cpuPid, cpuTid, cpuTid, o.Device, o.Device, o.Device, o.Device,
		o.Device, StreamCompute, StreamCompute, o.Device, StreamNCCL, StreamNCCL)
	evIdx := 0
	simulate(o, func(r record) bool {
		if r.rec == recStep && o.TargetBytes > 0 {
			bw.Flush()
			if cw.n >= o.TargetBytes {
				return false
			}
		}
		evIdx++
		switch r.rec {
		case recStep:
			p(`,
  {
    "ph": "X", "cat": "user_annotation", "name": %s, "pid": %d, "tid": %d,
    "ts": %s, "dur": %s,
    "args": {
      "External id": %d, "Record function id": 0, "Ev Idx": %d
    }
  }`, quote(r.name), cpuPid, cpuTid, us(r.ts), us(r.dur), r.ext, evIdx)
		case recCPUOp:
			p(`,
  {
    "ph": "X", "cat": "cpu_op", "name": %s, "pid": %d, "tid": %d,
    "ts": %s, "dur": %s,
    "args": {
      "External id": %d, "Record function id": 0, "Sequence number": %d, "Fwd thread id": 0, "Ev Idx": %d
    }
  }`, quote(r.name), cpuPid, cpuTid, us(r.ts), us(r.dur), r.ext, r.ext, evIdx)
		case recRuntime:
			cbid := 211
			switch r.name {
			case "cudaGraphLaunch":
				cbid = 311
			case "cudaMemcpyAsync":
				cbid = 41
			case "cudaMemsetAsync":
				cbid = 51
			}
			p(`,
  {
    "ph": "X", "cat": "cuda_runtime", "name": %s, "pid": %d, "tid": %d,
    "ts": %s, "dur": %s,
    "args": {
      "External id": %d, "cbid": %d, "correlation": %d
    }
  },
  {
    "ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s,
    "cat": "ac2g", "name": "ac2g"
  }`, quote(r.name), cpuPid, cpuTid, us(r.ts), us(r.dur), r.ext, cbid, r.corr, r.corr, cpuPid, cpuTid, us(r.ts))
		case recGPU:
			stream := StreamCompute
			if r.gpu.stream != 0 {
				stream = r.gpu.stream
			}
			switch r.gpu.kind {
			case kernel:
				graph := ""
				if r.graphID > 0 {
					graph = fmt.Sprintf(`, "graph id": %d, "graph node id": %d`, r.graphID, r.graphNde)
				}
				p(`,
  {
    "ph": "X", "cat": "kernel", "name": %s, "pid": %d, "tid": %d,
    "ts": %s, "dur": %s,
    "args": {
      "External id": %d,
      "queued": 0, "device": %d, "context": 1,
      "stream": %d, "correlation": %d,
      "registers per thread": 128,
      "shared memory": 49152,
      "blocks per SM": %.6f,
      "warps per SM": %.6f,
      "grid": [%d, %d, %d],
      "block": [%d, %d, %d],
      "est. achieved occupancy %%": 25%s
    }
  }`, quote(r.name), o.Device, stream, us(r.ts), us(r.dur), r.ext, o.Device, stream, r.corr,
					float64(r.gpu.grid[0]*r.gpu.grid[1]*r.gpu.grid[2])/132,
					float64(r.gpu.grid[0]*r.gpu.grid[1]*r.gpu.grid[2]*r.gpu.block[0]*r.gpu.block[1]*r.gpu.block[2])/32/132,
					r.gpu.grid[0], r.gpu.grid[1], r.gpu.grid[2], r.gpu.block[0], r.gpu.block[1], r.gpu.block[2], graph)
			default:
				cat := "gpu_memcpy"
				if r.gpu.kind == memset {
					cat = "gpu_memset"
				}
				p(`,
  {
    "ph": "X", "cat": %q, "name": %s, "pid": %d, "tid": %d,
    "ts": %s, "dur": %s,
    "args": {
      "External id": %d,
      "device": %d, "context": 1,
      "stream": %d, "correlation": %d,
      "bytes": %d, "memory bandwidth (GB/s)": %.6f
    }
  }`, cat, quote(r.name), o.Device, stream, us(r.ts), us(r.dur), r.ext, o.Device, stream, r.corr,
					r.gpu.bytes, float64(r.gpu.bytes)/float64(max(r.dur, 1)))
			}
			if r.graphNde <= 1 {
				p(`,
  {
    "ph": "f", "id": %d, "pid": %d, "tid": %d, "ts": %s,
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  }`, r.corr, o.Device, stream, us(r.ts))
			}
		}
		return true
	})
	p(`
  ],
  "traceName": "/tmp/vllm_profile/rank%d.pt.trace.json"
}
`, o.Device)
	if err := bw.Flush(); err != nil {
		return cw.n, fmt.Errorf("tracegen: write chrome trace: %w", err)
	}
	return cw.n, nil
}

// us formats nanoseconds as microseconds with three decimals, as kineto does.
func us(ns int64) string {
	return strconv.FormatInt(ns/1000, 10) + "." + fmt.Sprintf("%03d", ns%1000)
}

// quote writes a JSON string; generated names hold no characters that need
// more than strconv's escaping, which is valid JSON for them.
func quote(s string) string { return strconv.Quote(s) }

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
