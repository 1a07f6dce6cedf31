package robust

// Select reorders v so that v[k] is its k-th smallest value (0-based) with
// no larger value before it, and returns that value. It uses quickselect
// with a median-of-three pivot. v must be non-empty and 0 <= k < len(v).
func Select(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// MedianInPlace returns the median of v, reordering v; 0 for no values.
// NaN values must be removed first.
func MedianInPlace(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return 0
	}
	k := n / 2
	hi := Select(v, k)
	if n%2 == 1 {
		return hi
	}
	// The lower middle value is the largest of the k values before v[k].
	lo := v[0]
	for _, x := range v[1:k] {
		if x > lo {
			lo = x
		}
	}
	return (lo + hi) / 2
}
