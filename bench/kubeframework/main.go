// Command kubeframework times kube-scheduler's own scheduling framework in process, with no API
// server: the reference bench/engine.py --kube compares berth's engine with.
//
// It builds a real *scheduler.Scheduler (scheduler.New with the in-tree registry and the default
// profile, a fake clientset holding the nodes, informers started and their handlers synced), then
// runs for every pod what kube-scheduler's scheduling cycle runs: Cache.UpdateSnapshot,
// SchedulePod (PreFilter, Filter on the default 16 goroutines, PreScore, Score), Cache.AssumePod,
// Reserve and Permit. Binding is left out, as bench/engine.py's Engine.schedule_one leaves it out.
// OpportunisticBatching is off, as scheduler_perf sets it, so every pod is filtered and scored.
//
// The nodes and pods are bench/engine.py's (scheduler_perf's node-default and pod-default
// templates plus the per-workload terms): keep the two in step. It prints one JSON object with
// pods_per_s, cpu_ms (user+system CPU of the whole process, all threads, per measured pod),
// p50_ms and p99_ms.
//
// Built by bench/kube_framework.py from the Go module cache (a wrapper module requiring
// k8s.io/kubernetes v1.36.3); run it through `bench/engine.py --kube`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

var zones = []string{"zone-a", "zone-b", "zone-c"}

// makeNode is bench/engine.py's make_node: scheduler_perf's node-default in one of three zones.
func makeNode(i int) *v1.Node {
	name := fmt.Sprintf("scheduler-perf-%d", i)
	res := v1.ResourceList{
		v1.ResourcePods:   resource.MustParse("110"),
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("32Gi"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			UID:  types.UID(fmt.Sprintf("node-%d", i)),
			Labels: map[string]string{
				"kubernetes.io/hostname":      name,
				"topology.kubernetes.io/zone": zones[i%len(zones)],
			},
		},
		Status: v1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
	}
}

// makePod is bench/engine.py's make_pod for one workload.
func makePod(i int, workload string) *v1.Pod {
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("500Mi")}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("pod-%d", i),
			Namespace: "default",
			UID:       types.UID(fmt.Sprintf("pod-%d", i)),
		},
		Spec: v1.PodSpec{
			SchedulerName: v1.DefaultSchedulerName,
			Containers: []v1.Container{{
				Name:      "pause",
				Image:     "registry.k8s.io/pause:3.10.2",
				Ports:     []v1.ContainerPort{{ContainerPort: 80}},
				Resources: v1.ResourceRequirements{Limits: res, Requests: res.DeepCopy()},
			}},
		},
	}
	selector := func(color string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"color": color}}
	}
	switch workload {
	case "SchedulingBasic":
	case "TopologySpreading", "SpreadingWithPreferredAntiAffinity":
		pod.Labels = map[string]string{"color": "blue"}
		pod.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
			MaxSkew:           5,
			TopologyKey:       "topology.kubernetes.io/zone",
			WhenUnsatisfiable: v1.DoNotSchedule,
			LabelSelector:     selector("blue"),
		}}
		if workload == "SpreadingWithPreferredAntiAffinity" {
			term := v1.PodAffinityTerm{LabelSelector: selector("blue"), TopologyKey: "kubernetes.io/hostname"}
			pod.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term}},
			}}
		}
	case "SchedulingPodAntiAffinity":
		pod.Labels = map[string]string{"color": "green"}
		term := v1.PodAffinityTerm{LabelSelector: selector("green"), TopologyKey: "kubernetes.io/hostname"}
		pod.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term},
		}}
	default:
		fail("unknown workload %q (SchedulingBasic, TopologySpreading, SpreadingWithPreferredAntiAffinity, SchedulingPodAntiAffinity)", workload)
	}
	return pod
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kubeframework: "+format+"\n", args...)
	os.Exit(1)
}

// cpuSeconds is the user+system CPU of the whole process (every thread) so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// bench is one scheduler with the nodes in its cache, ready to run scheduling cycles.
type bench struct {
	sched    *scheduler.Scheduler
	fwk      framework.Framework
	snapshot *internalcache.Snapshot
	logger   klog.Logger
}

func newBench(ctx context.Context, numNodes int) *bench {
	objects := make([]runtime.Object, 0, numNodes)
	for i := 0; i < numNodes; i++ {
		objects = append(objects, makeNode(i))
	}
	client := fake.NewClientset(objects...)
	factory := scheduler.NewInformerFactory(client, 0)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	sched, err := scheduler.New(ctx, client, factory, nil, profile.NewRecorderFactory(broadcaster))
	if err != nil {
		fail("scheduler.New: %v", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		fail("waiting for the event handlers: %v", err)
	}
	fw, ok := sched.Profiles[v1.DefaultSchedulerName]
	if !ok {
		fail("no %s profile", v1.DefaultSchedulerName)
	}
	// The scheduler's own snapshot (unexported field) is the one its framework lists nodes from.
	snapshot, ok := fw.SnapshotSharedLister().(*internalcache.Snapshot)
	if !ok {
		fail("the framework's snapshot lister is a %T, not *cache.Snapshot", fw.SnapshotSharedLister())
	}
	return &bench{sched: sched, fwk: fw, snapshot: snapshot, logger: klog.FromContext(ctx)}
}

// scheduleOne is kube-scheduler's schedulingCycle for one pod, binding left out.
func (b *bench) scheduleOne(ctx context.Context, pod *v1.Pod) error {
	if err := b.sched.Cache.UpdateSnapshot(b.logger, b.snapshot); err != nil {
		return err
	}
	podInfo, err := framework.NewPodInfo(pod)
	if err != nil {
		return err
	}
	state := framework.NewCycleState()
	state.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())
	result, err := b.sched.SchedulePod(ctx, b.fwk, state, &framework.QueuedPodInfo{PodInfo: podInfo})
	if err != nil {
		return err
	}
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = result.SuggestedHost
	if err := b.sched.Cache.AssumePod(b.logger, assumed); err != nil {
		return err
	}
	if status := b.fwk.RunReservePluginsReserve(ctx, state, assumed, result.SuggestedHost); !status.IsSuccess() {
		return status.AsError()
	}
	if _, status := b.fwk.RunPermitPlugins(ctx, state, assumed, result.SuggestedHost); !status.IsSuccess() {
		return status.AsError()
	}
	return nil
}

func main() {
	workload := flag.String("workload", "SchedulingBasic", "SchedulingBasic, TopologySpreading, SpreadingWithPreferredAntiAffinity or SchedulingPodAntiAffinity")
	numNodes := flag.Int("nodes", 500, "nodes in the cluster")
	initPods := flag.Int("init-pods", 1000, "pods scheduled before the measured ones")
	measurePods := flag.Int("measure-pods", 1000, "pods timed")
	flag.Parse()
	klog.SetOutput(os.Stderr)
	if err := utilfeature.DefaultMutableFeatureGate.Set("OpportunisticBatching=false"); err != nil {
		fail("feature gates: %v", err)
	}
	metrics.Register()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := newBench(ctx, *numNodes)
	for i := 0; i < *initPods; i++ {
		if err := b.scheduleOne(ctx, makePod(i, *workload)); err != nil {
			fail("init pod %d: %v", i, err)
		}
	}
	pods := make([]*v1.Pod, *measurePods)
	for i := range pods {
		pods[i] = makePod(*initPods+i, *workload)
	}
	latencies := make([]time.Duration, 0, len(pods))
	cpuStart, start := cpuSeconds(), time.Now()
	for _, pod := range pods {
		t0 := time.Now()
		if err := b.scheduleOne(ctx, pod); err != nil {
			fail("pod %s not scheduled: %v", pod.Name, err)
		}
		latencies = append(latencies, time.Since(t0))
	}
	elapsed, cpu := time.Since(start).Seconds(), cpuSeconds()-cpuStart
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	n := len(latencies)
	out := map[string]float64{"pods_per_s": 0, "cpu_ms": 0, "p50_ms": 0, "p99_ms": 0}
	if n > 0 {
		p99 := n * 99 / 100
		if p99 > n-1 {
			p99 = n - 1
		}
		out = map[string]float64{
			"pods_per_s": float64(n) / elapsed,
			"cpu_ms":     cpu * 1000 / float64(n),
			"p50_ms":     ms(latencies[n/2]),
			"p99_ms":     ms(latencies[p99]),
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("writing the result: %v", err)
	}
}
