package telemetry

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// newRechunkingCompactor is the hourly tier's compactor. The tier writes
// a block per hour (see flushHourHead), so each series has a chunk of one
// sample per hour. The TSDB's own compactor copies chunks that do not
// overlap as they are, so a week of merged hourly blocks would still hold
// 168 one-sample chunks a series, and a 7-day view would read as many. A
// 64-engine fleet's week took four times the disk that way (162 MB, not
// 40) and twice the mapped memory.
// This compactor decodes a series' samples from every block it merges and
// encodes them again into chunks of up to 120 samples.
func newRechunkingCompactor(ctx context.Context, r prometheus.Registerer, l *slog.Logger, ranges []int64, pool chunkenc.Pool, opts *tsdb.Options) (tsdb.Compactor, error) {
	return tsdb.NewLeveledCompactorWithOptions(ctx, r, l, ranges, pool, tsdb.LeveledCompactorOptions{
		MaxBlockChunkSegmentSize:    opts.MaxBlockChunkSegmentSize,
		EnableOverlappingCompaction: opts.EnableOverlappingCompaction,
		PD:                          opts.PostingsDecoderFactory,
		BlockExcludeFilter:          opts.BlockCompactionExcludeFunc,
		MergeFunc:                   rechunk,
	})
}

// rechunk merges one series' chunks from several blocks into full chunks.
// Samples at the same timestamp in two blocks (an out-of-order block
// beside its hour's) are deduplicated as the TSDB's own merge does.
func rechunk(series ...storage.ChunkSeries) storage.ChunkSeries {
	return &storage.ChunkSeriesEntry{
		Lset: series[0].Labels(),
		ChunkIteratorFn: func(reuse chunks.Iterator) chunks.Iterator {
			var parts []storage.Series
			for _, s := range series {
				it := s.Iterator(nil)
				for it.Next() {
					chk := it.At().Chunk
					parts = append(parts, &storage.SeriesEntry{
						Lset:             s.Labels(),
						SampleIteratorFn: func(it chunkenc.Iterator) chunkenc.Iterator { return chk.Iterator(it) },
					})
				}
				if err := it.Err(); err != nil {
					return failedChunks{err}
				}
			}
			return storage.NewSeriesToChunkEncoder(storage.ChainedSeriesMerge(parts...)).Iterator(reuse)
		},
	}
}

// failedChunks is a chunk iterator that only reports err.
type failedChunks struct{ err error }

func (failedChunks) At() chunks.Meta { return chunks.Meta{} }
func (failedChunks) Next() bool      { return false }
func (f failedChunks) Err() error    { return f.err }
