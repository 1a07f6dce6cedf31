package sim

// Deployment is one served model: Replicas engines of TP GPUs each.
type Deployment struct {
	Spec     ModelSpec
	Replicas int
	TP       int // tensor-parallel GPUs per engine
}

// fleetTP is the tensor-parallel size each spec of Models runs at in the
// fleet preset, by index: the 8B and 7B models on one GPU, the 14B on two,
// the 32B on four.
var fleetTP = []int{1, 4, 1, 2}

// fleetReplicas are the replica counts of the preset's deployments of each
// tensor-parallel size, in order; they sum to 200 engines on one GPU, 200
// on two and 100 on four.
var fleetReplicas = map[int][]int{
	1: {4, 6, 8, 10, 12, 16, 20, 4, 6, 8, 10, 12, 16, 20, 4, 6, 8, 10, 12, 8},
	2: {8, 12, 16, 24, 32, 8, 12, 16, 24, 48},
	4: {4, 6, 8, 10, 12, 4, 6, 8, 10, 32},
}

// FleetPreset is a large mixed fleet: 40 models of four sizes (8B and 7B
// on one GPU, 14B on two, 32B on four), 4 to 48 replicas each: 500
// engines on 1,000 GPUs.
func FleetPreset() []Deployment {
	next := map[int]int{}
	var out []Deployment
	for i := range 40 {
		tp := fleetTP[i%len(fleetTP)]
		reps := fleetReplicas[tp][next[tp]]
		next[tp]++
		out = append(out, Deployment{Spec: modelSpec(i), Replicas: reps, TP: tp})
	}
	return out
}
