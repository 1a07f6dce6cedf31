// Package scripts holds the repository's scripts: ensure-test-deps, which
// make test-deps runs, and the evaluation scripts for public labelled data
// (labelled-to-nab, detector-score, window-recurrence; the last two share
// nab.py, the directory layout, warm-up and halves). Its tests run
// ensure-test-deps against stub commands and window-recurrence on a
// series built so its answer is known; detector-score's test lives with
// the detect command it scores.
package scripts
