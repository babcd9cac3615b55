// Command parity-oracle runs kube-scheduler v1.36.3's own scheduling framework over a `berth simulate`
// state file and prints, per pending pod, what kube-scheduler decides, in `berth simulate -o json`'s
// shape (plus "bestNodes", the set of top-scoring nodes kube-scheduler picks from at random).
//
//	parity-oracle [-config FILE] [-disable P1,P2] STATE          one state, one JSON document
//	parity-oracle -batch                                          JSON lines on stdin:
//	    {"state": "a.yaml", "config": "c.yaml", "disable": ["P"]}  -> one JSON line per request
//
// What is kube-scheduler's own code: config decoding/defaulting/validation (the scheme's UniversalDecoder,
// as kube-scheduler's LoadConfigFromFile), scheduler.New with the in-tree registry, informers and event
// handlers filling the scheduler cache, Scheduler.SchedulePod (schedulePod, findNodesThatFitPod,
// prioritizeNodes) and the profile's RunPostFilterPlugins (DefaultPreemption). What is glue written here:
//   - reading the state file and applying what kube-apiserver applies on create: the v1 defaulters of the
//     k8s scheme, the pod strategy's PrepareForCreate (matchLabelKeys merged into selectors) and the
//     Priority admission plugin (priority value and preemptionPolicy from the class);
//   - updating the profile's snapshot from the cache before each attempt (schedulingCycle's first line);
//   - observing the cycle: SchedulePod gets the profile wrapped in recordingFramework, which passes every
//     call through and records the Filter verdicts, the PreFilterResult and the Score results, because
//     SchedulePod returns only the chosen node (the detail of a scheduled pod never leaves schedulePod);
//   - after a preemption, retrying the pod with status.nominatedNodeName set once the victims are gone
//     from the cache, as `berth simulate` does (it stands for the requeue on the victims' deletion).
//
// SchedulerAsyncPreemption is switched off so that DefaultPreemption deletes its victims before PostFilter
// returns (the async executor deletes the same victims in a goroutine); the choice of victims is the same.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	appsdefaults "k8s.io/kubernetes/pkg/apis/apps/v1"
	"k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // v1 <-> internal Pod conversions for the pod strategy
	coredefaults "k8s.io/kubernetes/pkg/apis/core/v1"
	policydefaults "k8s.io/kubernetes/pkg/apis/policy/v1"
	resourcedefaults "k8s.io/kubernetes/pkg/apis/resource/v1"
	schedulingdefaults "k8s.io/kubernetes/pkg/apis/scheduling/v1"
	storagedefaults "k8s.io/kubernetes/pkg/apis/storage/v1"
	podregistry "k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/scheduler"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	"sigs.k8s.io/yaml"
)

// maxPreemptionRetries mirrors berth simulate's MAX_PREEMPTION_RETRIES.
const maxPreemptionRetries = 3

// filterVerdict is one failing node of the "filter" map.
type filterVerdict struct {
	Plugin  string   `json:"plugin"`
	Status  string   `json:"status"`
	Reasons []string `json:"reasons"`
}

// podRecord is berth simulate's record_dict plus bestNodes.
type podRecord struct {
	Pod            string                      `json:"pod"`
	Node           *string                     `json:"node"`
	Status         string                      `json:"status"`
	Message        string                      `json:"message"`
	FeasibleNodes  int                         `json:"feasibleNodes"`
	EvaluatedNodes int                         `json:"evaluatedNodes"`
	NominatedNode  *string                     `json:"nominatedNode"`
	Victims        []string                    `json:"victims"`
	Filter         map[string]filterVerdict    `json:"filter"`
	Scores         map[string]map[string]int64 `json:"scores"`
	BestNodes      []string                    `json:"bestNodes"`
}

type output struct {
	Pods  []podRecord `json:"pods"`
	Error string      `json:"error,omitempty"`
}

// ---- state file -------------------------------------------------------------------------------------

// apiDefaults holds the v1 defaulters kube-apiserver runs on create.
var apiDefaults = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, register := range []func(*runtime.Scheme) error{coredefaults.RegisterDefaults, appsdefaults.RegisterDefaults,
		policydefaults.RegisterDefaults, schedulingdefaults.RegisterDefaults, storagedefaults.RegisterDefaults,
		resourcedefaults.RegisterDefaults} {
		if err := register(s); err != nil {
			panic(err)
		}
	}
	return s
}()

type clusterState struct {
	objects []runtime.Object // everything but pending pods, API-defaulted
	nodes   []string
	pending []*v1.Pod
	classes map[string]*schedulingv1.PriorityClass
}

// readDocuments returns the top-level objects of a multi-document YAML or JSON file, Lists flattened.
func readDocuments(data []byte) ([]map[string]any, error) {
	var out []map[string]any
	var flatten func(v any) error
	flatten = func(v any) error {
		switch t := v.(type) {
		case nil:
			return nil
		case []any:
			for _, item := range t {
				if err := flatten(item); err != nil {
					return err
				}
			}
		case map[string]any:
			kind, _ := t["kind"].(string)
			if items, ok := t["items"].([]any); ok && strings.HasSuffix(kind, "List") {
				for _, item := range items {
					if m, ok := item.(map[string]any); ok && m["kind"] == nil && kind != "List" {
						m["kind"] = strings.TrimSuffix(kind, "List")
					}
					if err := flatten(item); err != nil {
						return err
					}
				}
				return nil
			}
			out = append(out, t)
		default:
			return fmt.Errorf("expected an object, got %T", v)
		}
		return nil
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if err := flatten(doc); err != nil {
			return nil, err
		}
	}
}

func decodeInto(raw map[string]any, obj runtime.Object) error {
	data, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return err
	}
	apiDefaults.Default(obj)
	return nil
}

func loadState(path string) (*clusterState, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs, err := readDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st := &clusterState{classes: map[string]*schedulingv1.PriorityClass{}}
	// The classes every API server creates at start-up.
	for name, value := range map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000} {
		st.classes[name] = &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	}
	var pods []*v1.Pod
	for i, raw := range docs {
		var obj runtime.Object
		switch raw["kind"] {
		case "Node":
			obj = &v1.Node{}
		case "Pod":
			obj = &v1.Pod{}
		case "Namespace":
			obj = &v1.Namespace{}
		case "Service":
			obj = &v1.Service{}
		case "ReplicationController":
			obj = &v1.ReplicationController{}
		case "ReplicaSet":
			obj = &appsv1.ReplicaSet{}
		case "StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		case "PriorityClass":
			obj = &schedulingv1.PriorityClass{}
		case "PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode", "CSIDriver",
			"CSIStorageCapacity", "VolumeAttachment":
			obj = newStorageObject(raw["kind"].(string))
		// DynamicResources' objects (resource.k8s.io/v1), read by its informers like the others.
		case "DeviceClass":
			obj = &resourceapi.DeviceClass{}
		case "ResourceClaim":
			obj = &resourceapi.ResourceClaim{}
		case "ResourceClaimTemplate":
			obj = &resourceapi.ResourceClaimTemplate{}
		case "ResourceSlice":
			obj = &resourceapi.ResourceSlice{}
		default:
			fmt.Fprintf(os.Stderr, "%s: document %d: kind %v ignored\n", path, i+1, raw["kind"])
			continue
		}
		if err := decodeInto(raw, obj); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		switch o := obj.(type) {
		case *v1.Pod:
			if o.Namespace == "" {
				o.Namespace = metav1.NamespaceDefault
			}
			if o.UID == "" {
				o.UID = types.UID(o.Namespace + "/" + o.Name) // the cache keys pods by UID
			}
			if o.Status.Phase == v1.PodSucceeded || o.Status.Phase == v1.PodFailed {
				continue // kube-scheduler's pod informer filters terminated pods out
			}
			pods = append(pods, o)
			continue
		case *v1.Node:
			st.nodes = append(st.nodes, o.Name)
		case *schedulingv1.PriorityClass:
			st.classes[o.Name] = o
		}
		st.objects = append(st.objects, obj)
	}
	for i, pod := range pods {
		if pods[i], err = prepareForCreate(pod); err != nil {
			return nil, fmt.Errorf("%s: pod %s/%s: %w", path, pod.Namespace, pod.Name, err)
		}
		pod = pods[i]
		if err := admitPriority(pod, st.classes); err != nil {
			return nil, fmt.Errorf("%s: pod %s/%s: %w", path, pod.Namespace, pod.Name, err)
		}
		if pod.Spec.NodeName == "" {
			st.pending = append(st.pending, pod)
		} else {
			st.objects = append(st.objects, pod)
		}
	}
	return st, nil
}

// newStorageObject is the empty typed object of a storage kind: the volume plugins read them through the
// fake clientset's informers (VolumeBinding's assume caches read the informers' stores directly).
func newStorageObject(kind string) runtime.Object {
	switch kind {
	case "PersistentVolume":
		return &v1.PersistentVolume{}
	case "PersistentVolumeClaim":
		return &v1.PersistentVolumeClaim{}
	case "StorageClass":
		return &storagev1.StorageClass{}
	case "CSINode":
		return &storagev1.CSINode{}
	case "CSIDriver":
		return &storagev1.CSIDriver{}
	case "CSIStorageCapacity":
		return &storagev1.CSIStorageCapacity{}
	default:
		return &storagev1.VolumeAttachment{}
	}
}

// prepareForCreate runs the pod registry strategy's PrepareForCreate, as kube-apiserver does on create:
// among others it merges pod (anti-)affinity terms' matchLabelKeys/mismatchLabelKeys and topology spread
// constraints' matchLabelKeys into their label selectors, which kube-scheduler then reads as they are.
// The status it resets is put back: it is what the kubelet reported since (startTime, phase).
func prepareForCreate(pod *v1.Pod) (*v1.Pod, error) {
	internal := &core.Pod{}
	if err := legacyscheme.Scheme.Convert(pod, internal, nil); err != nil {
		return nil, err
	}
	podregistry.Strategy.PrepareForCreate(context.Background(), internal)
	out := &v1.Pod{}
	if err := legacyscheme.Scheme.Convert(internal, out, nil); err != nil {
		return nil, err
	}
	out.Status = pod.Status
	return out, nil
}

// admitPriority is the Priority admission plugin on create: the class's (or the global default's, the
// lowest-valued one if several) value and preemptionPolicy. A pod that already has spec.priority (one
// read back from a cluster) was admitted before and is kept as it is.
func admitPriority(pod *v1.Pod, classes map[string]*schedulingv1.PriorityClass) error {
	if pod.Spec.Priority != nil {
		return nil
	}
	var class *schedulingv1.PriorityClass
	if name := pod.Spec.PriorityClassName; name != "" {
		if class = classes[name]; class == nil {
			return fmt.Errorf("no PriorityClass with name %s was found", name)
		}
	} else {
		for _, pc := range classes {
			if pc.GlobalDefault && (class == nil || pc.Value < class.Value) {
				class = pc
			}
		}
	}
	priority := int32(0)
	if class != nil {
		priority = class.Value
		if class.PreemptionPolicy != nil && pod.Spec.PreemptionPolicy == nil {
			policy := *class.PreemptionPolicy
			pod.Spec.PreemptionPolicy = &policy
		}
	}
	pod.Spec.Priority = &priority
	return nil
}

// ---- configuration ----------------------------------------------------------------------------------

// loadConfig decodes a KubeSchedulerConfiguration as kube-scheduler does (defaulting included) after
// adding `disable` to every profile's multiPoint.disabled (plugins berth has not implemented yet), and
// validates it.
func loadConfig(path string, disable []string) (*schedulerapi.KubeSchedulerConfiguration, error) {
	raw := map[string]any{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(data, &raw); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(disable) > 0 {
		profiles, _ := raw["profiles"].([]any)
		if len(profiles) == 0 {
			profiles = []any{map[string]any{}}
		}
		for _, p := range profiles {
			prof := p.(map[string]any)
			plugins, _ := prof["plugins"].(map[string]any)
			if plugins == nil {
				plugins = map[string]any{}
			}
			multi, _ := plugins["multiPoint"].(map[string]any)
			if multi == nil {
				multi = map[string]any{}
			}
			disabled, _ := multi["disabled"].([]any)
			for _, name := range disable {
				disabled = append(disabled, map[string]any{"name": name})
			}
			multi["disabled"] = disabled
			plugins["multiPoint"] = multi
			prof["plugins"] = plugins
		}
		raw["profiles"] = profiles
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	obj, _, err := schedulerscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg, ok := obj.(*schedulerapi.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s: not a KubeSchedulerConfiguration", path)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("%s: invalid configuration: %w", path, err)
	}
	return cfg, nil
}

// ---- observing a cycle ------------------------------------------------------------------------------

// recordingFramework passes every call to the profile's framework and records what SchedulePod keeps
// to itself: the PreFilterResult, each failing node's Filter status and the Score results.
type recordingFramework struct {
	framework.Framework
	mu                 sync.Mutex
	preFilterResult    *fwk.PreFilterResult
	unscheduledPlugins []string
	failed             map[string]*fwk.Status
	firstFiltered      string
	firstPassed        bool
	scores             []fwk.NodePluginScores
}

func (r *recordingFramework) RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string]) {
	res, status, plugins := r.Framework.RunPreFilterPlugins(ctx, state, pod)
	r.preFilterResult = res
	r.unscheduledPlugins = plugins.UnsortedList()
	sort.Strings(r.unscheduledPlugins)
	return res, status, plugins
}

func (r *recordingFramework) RunFilterPluginsWithNominatedPods(ctx context.Context, state fwk.CycleState, pod *v1.Pod, info fwk.NodeInfo) *fwk.Status {
	status := r.Framework.RunFilterPluginsWithNominatedPods(ctx, state, pod, info)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.firstFiltered == "" {
		r.firstFiltered, r.firstPassed = info.Node().Name, status.IsSuccess()
	}
	if !status.IsSuccess() {
		r.failed[info.Node().Name] = status
	}
	return status
}

func (r *recordingFramework) RunScorePlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, *fwk.Status) {
	scores, status := r.Framework.RunScorePlugins(ctx, state, pod, nodes)
	r.scores = scores
	return scores, status
}

func verdict(s *fwk.Status) filterVerdict {
	reasons := s.Reasons()
	if reasons == nil {
		reasons = []string{}
	}
	return filterVerdict{Plugin: s.Plugin(), Status: s.Code().String(), Reasons: reasons}
}

// ---- scheduling -------------------------------------------------------------------------------------

type oracle struct {
	ctx     context.Context
	client  *fake.Clientset
	sched   *scheduler.Scheduler
	nodes   []string
	victims []string // namespace/name of pods deleted by preemption, in deletion order
	mu      sync.Mutex
}

func newOracle(ctx context.Context, st *clusterState, cfg *schedulerapi.KubeSchedulerConfiguration) (*oracle, error) {
	// Pending pods are in the API too (DefaultPreemption reads the preemptor back from the pod lister);
	// the scheduling queue they enter is never run.
	objects := append([]runtime.Object(nil), st.objects...)
	for _, pod := range st.pending {
		objects = append(objects, pod)
	}
	o := &oracle{ctx: ctx, client: fake.NewClientset(objects...), nodes: st.nodes}
	o.client.PrependReactor("delete", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		del := action.(k8stesting.DeleteAction)
		o.mu.Lock()
		o.victims = append(o.victims, del.GetNamespace()+"/"+del.GetName())
		o.mu.Unlock()
		return false, nil, nil // the tracker does the deletion
	})
	informerFactory := scheduler.NewInformerFactory(o.client, 0)
	recorders := profile.RecorderFactory(func(string) events.EventRecorderLogger { return &events.FakeRecorder{} })
	sched, err := scheduler.New(ctx, o.client, informerFactory, nil, recorders,
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithParallelism(cfg.Parallelism))
	if err != nil {
		return nil, err
	}
	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return nil, err
	}
	o.sched = sched
	return o, o.waitForPodCount(countPods(st.objects))
}

func countPods(objs []runtime.Object) int {
	n := 0
	for _, obj := range objs {
		if _, ok := obj.(*v1.Pod); ok {
			n++
		}
	}
	return n
}

// waitForPodCount waits until the informers have brought the scheduler cache to n pods.
func (o *oracle) waitForPodCount(n int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		count, err := o.sched.Cache.PodCount()
		if err != nil {
			return err
		}
		if count == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("scheduler cache holds %d pods, want %d", count, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// attempt is one SchedulePod call (plus PostFilter when it fails) and what it recorded.
type attempt struct {
	rec        *recordingFramework
	result     scheduler.ScheduleResult
	err        error
	fitErr     *framework.FitError
	nominating *fwk.NominatingInfo
	victims    []string
}

func (o *oracle) attempt(profileFwk framework.Framework, pod *v1.Pod) (*attempt, error) {
	logger := klog.FromContext(o.ctx)
	snapshot := profileFwk.SnapshotSharedLister().(*internalcache.Snapshot)
	if err := o.sched.Cache.UpdateSnapshot(logger, snapshot); err != nil {
		return nil, err
	}
	state := framework.NewCycleState()
	state.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())
	podInfo, err := framework.NewPodInfo(pod)
	if err != nil {
		return nil, err
	}
	a := &attempt{rec: &recordingFramework{Framework: profileFwk, failed: map[string]*fwk.Status{}}}
	o.mu.Lock()
	before := len(o.victims)
	o.mu.Unlock()
	podsBefore, err := o.sched.Cache.PodCount()
	if err != nil {
		return nil, err
	}
	a.result, a.err = o.sched.SchedulePod(o.ctx, a.rec, state, &framework.QueuedPodInfo{PodInfo: podInfo, Timestamp: time.Now()})
	if errors.As(a.err, &a.fitErr) && profileFwk.HasPostFilterPlugins() {
		// schedulingAlgorithm: PostFilter on the failed cycle's state, its message into the FitError.
		result, status := profileFwk.RunPostFilterPlugins(o.ctx, state, pod, a.fitErr.Diagnosis.NodeToStatus)
		a.fitErr.Diagnosis.PostFilterMsg = status.Message()
		if result != nil {
			a.nominating = result.NominatingInfo
		}
	}
	o.mu.Lock()
	a.victims = append([]string(nil), o.victims[before:]...)
	o.mu.Unlock()
	// Let the informers carry the victims' deletions into the cache before anything else looks at it.
	return a, o.waitForPodCount(podsBefore - len(a.victims))
}

func (o *oracle) schedule(pod *v1.Pod) (podRecord, error) {
	rec := podRecord{Pod: pod.Namespace + "/" + pod.Name, Victims: []string{}, Filter: map[string]filterVerdict{},
		Scores: map[string]map[string]int64{}, BestNodes: []string{}}
	profileFwk, ok := o.sched.Profiles[pod.Spec.SchedulerName]
	if !ok {
		rec.Status, rec.Message = "Error", fmt.Sprintf("no profile for scheduler name %q", pod.Spec.SchedulerName)
		return rec, nil
	}
	for _, pl := range profileFwk.PreEnqueuePlugins() {
		if s := pl.PreEnqueue(o.ctx, pod); !s.IsSuccess() {
			rec.Status, rec.Message = "Gated", s.Message()
			return rec, nil
		}
	}
	a, err := o.attempt(profileFwk, pod)
	if err != nil {
		return rec, err
	}
	var victims []string
	for retries := 0; ; retries++ {
		victims = append(victims, a.victims...)
		if len(a.victims) > 0 && a.nominating != nil && a.nominating.NominatedNodeName != "" {
			node := a.nominating.NominatedNodeName
			rec.NominatedNode = &node
		}
		if len(a.victims) == 0 || rec.NominatedNode == nil || retries == maxPreemptionRetries {
			break
		}
		// The victims' deletion requeues the pod, which now carries its nomination.
		pod = pod.DeepCopy()
		pod.Status.NominatedNodeName = *rec.NominatedNode
		if a, err = o.attempt(profileFwk, pod); err != nil {
			return rec, err
		}
	}
	sort.Strings(victims)
	rec.Victims = append(rec.Victims, victims...)
	o.explain(&rec, a, pod)
	if rec.Status == "Scheduled" {
		bound := pod.DeepCopy()
		bound.Spec.NodeName = *rec.Node
		count, err := o.sched.Cache.PodCount()
		if err != nil {
			return rec, err
		}
		if _, err := o.client.CoreV1().Pods(bound.Namespace).Update(o.ctx, bound, metav1.UpdateOptions{}); err != nil {
			return rec, err
		}
		return rec, o.waitForPodCount(count + 1)
	}
	return rec, nil
}

// explain fills rec from the last attempt, the way berth simulate's explain_attempt does.
func (o *oracle) explain(rec *podRecord, a *attempt, pod *v1.Pod) {
	r := a.rec
	switch {
	case a.err == nil:
		node := a.result.SuggestedHost
		rec.Status, rec.Node = "Scheduled", &node
		rec.FeasibleNodes, rec.EvaluatedNodes = a.result.FeasibleNodes, a.result.EvaluatedNodes
		for name, s := range r.failed {
			rec.Filter[name] = verdict(s)
		}
		// findNodesThatFitPod gives the nodes a PreFilterResult left out an absent-node status, unless
		// the nominated node passed first (then it returns before).
		nominatedPassed := pod.Status.NominatedNodeName != "" && r.firstFiltered == pod.Status.NominatedNodeName && r.firstPassed
		if r.preFilterResult != nil && !r.preFilterResult.AllNodes() && !nominatedPassed {
			absent := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", r.unscheduledPlugins))
			for _, name := range o.nodes {
				if _, ok := r.failed[name]; !ok && !r.preFilterResult.NodeNames.Has(name) {
					rec.Filter[name] = verdict(absent)
				}
			}
		}
		o.scores(rec, r, node)
	case a.fitErr != nil:
		rec.Status, rec.Message = "Unschedulable", a.fitErr.Error()
		statuses := a.fitErr.Diagnosis.NodeToStatus
		if a.fitErr.Diagnosis.PreFilterMsg != "" {
			rec.EvaluatedNodes = a.fitErr.NumAllNodes
		} else {
			rec.EvaluatedNodes = statuses.Len()
		}
		// Every node: the explicit statuses, and the absent-node status for the others (all of them
		// after a PreFilter rejection), as FitError counts them.
		for _, name := range o.nodes {
			rec.Filter[name] = verdict(statuses.Get(name))
		}
	default:
		rec.Status, rec.Message = "Error", a.err.Error()
		if errors.Is(a.err, scheduler.ErrNoNodesAvailable) {
			rec.Status = "Unschedulable"
		}
	}
}

// scores turns the weighted per-plugin scores back into normalized ones (the profile's weights) and
// lists the nodes sharing the best total. One feasible node is not scored: it is the best set.
func (o *oracle) scores(rec *podRecord, r *recordingFramework, chosen string) {
	if len(r.scores) == 0 {
		if rec.FeasibleNodes <= 1 || r.Framework.HasScorePlugins() {
			rec.BestNodes = append(rec.BestNodes, chosen)
			return
		}
		// No Score plugin: prioritizeNodes gives every feasible node the same score.
		for _, name := range o.nodes {
			if _, failed := rec.Filter[name]; !failed {
				rec.BestNodes = append(rec.BestNodes, name)
			}
		}
		return
	}
	weights := map[string]int64{}
	for _, p := range r.Framework.ListPlugins().Score.Enabled {
		weights[p.Name] = int64(p.Weight)
	}
	best := int64(-1 << 62)
	for _, ns := range r.scores {
		plugins := map[string]int64{"total": ns.TotalScore}
		for _, ps := range ns.Scores {
			plugins[ps.Name] = ps.Score / weights[ps.Name]
		}
		rec.Scores[ns.Name] = plugins
		if ns.TotalScore > best {
			best, rec.BestNodes = ns.TotalScore, rec.BestNodes[:0]
		}
		if ns.TotalScore == best {
			rec.BestNodes = append(rec.BestNodes, ns.Name)
		}
	}
	sort.Strings(rec.BestNodes)
}

// queueOrder sorts pending pods as PrioritySort pops them: higher priority first, then file order.
func queueOrder(pods []*v1.Pod) []*v1.Pod {
	sorted := append([]*v1.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool { return *sorted[i].Spec.Priority > *sorted[j].Spec.Priority })
	return sorted
}

func run(statePath, configPath string, disable []string) output {
	st, err := loadState(statePath)
	if err != nil {
		return output{Pods: []podRecord{}, Error: err.Error()}
	}
	cfg, err := loadConfig(configPath, disable)
	if err != nil {
		return output{Pods: []podRecord{}, Error: err.Error()}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o, err := newOracle(ctx, st, cfg)
	if err != nil {
		return output{Pods: []podRecord{}, Error: err.Error()}
	}
	out := output{Pods: []podRecord{}}
	for _, pod := range queueOrder(st.pending) {
		rec, err := o.schedule(pod)
		if err != nil {
			return output{Pods: out.Pods, Error: err.Error()}
		}
		out.Pods = append(out.Pods, rec)
	}
	return out
}

type request struct {
	State   string   `json:"state"`
	Config  string   `json:"config"`
	Disable []string `json:"disable"`
}

func main() {
	configPath := flag.String("config", "", "KubeSchedulerConfiguration file (default: kube-scheduler's defaults)")
	disable := flag.String("disable", "", "comma-separated plugins to disable in every profile's multiPoint")
	batch := flag.Bool("batch", false, "read JSON-line requests on stdin, write one JSON line per request")
	klog.InitFlags(nil)
	flag.Parse()
	// Quiet by default: kube-scheduler logs to stderr, the verdicts go to stdout.
	_ = flag.Set("v", "0")
	if err := utilfeature.DefaultMutableFeatureGate.Set("SchedulerAsyncPreemption=false"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *batch {
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(make([]byte, 1<<20), 1<<20)
		enc := json.NewEncoder(os.Stdout)
		for in.Scan() {
			var req request
			if err := json.Unmarshal(in.Bytes(), &req); err != nil {
				_ = enc.Encode(output{Pods: []podRecord{}, Error: "bad request: " + err.Error()})
				continue
			}
			_ = enc.Encode(run(req.State, req.Config, req.Disable))
		}
		return
	}
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: parity-oracle [-config FILE] [-disable P1,P2] STATE | parity-oracle -batch")
		os.Exit(2)
	}
	var names []string
	if *disable != "" {
		names = strings.Split(*disable, ",")
	}
	out := run(flag.Arg(0), *configPath, names)
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
	if out.Error != "" {
		os.Exit(1)
	}
}
