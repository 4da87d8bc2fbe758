// kube-validate runs the kube-apiserver's own create-time validation offline.
//
// It reads a multi-document YAML stream (helm template's output) on stdin and, for every object of a
// kind the apiserver serves, does what the apiserver does on create: decode into the versioned type,
// apply the scheme's defaulters, convert to the internal type, then the registry strategy's
// PrepareForCreate, Validate (with the options the apiserver uses) and the common ObjectMeta checks.
// Custom resources (the KubeRay CRDs given with -crds) go through the apiextensions-apiserver's
// decoding (pruning, defaulting) and custom resource strategy, CEL rules included (crd.go).
// Pod templates embedded in KubeRay RayJob/RayCluster objects (head group, every worker group, the
// submitter) are validated the same way as PodTemplates: KubeRay creates the pods from them, and a
// template the apiserver refuses leaves the RayJob waiting for pods that never appear. So is the pod
// template of an agent-sandbox SandboxTemplate, which its controller creates every sandbox's pod from.
//
// Output: one JSON document on stdout (see report). Exit 0 when the stream was read, whatever the
// findings; 2 when the stream itself cannot be read.
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
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validate/content"
	genericvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/yaml"

	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler"
	"k8s.io/kubernetes/pkg/registry/batch/cronjob"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/limitrange"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/podtemplate"
	"k8s.io/kubernetes/pkg/registry/core/resourcequota"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"
	"k8s.io/kubernetes/pkg/registry/networking/ingress"
	"k8s.io/kubernetes/pkg/registry/networking/networkpolicy"
	"k8s.io/kubernetes/pkg/registry/node/runtimeclass"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrole"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding"
	"k8s.io/kubernetes/pkg/registry/rbac/role"
	"k8s.io/kubernetes/pkg/registry/rbac/rolebinding"
	"k8s.io/kubernetes/pkg/registry/scheduling/priorityclass"
)

// kind -> the apiserver's create strategy and the resource it serves the kind as. An object of a kind
// neither here nor in -crds is not validated: the report lists it under skipped, and `-kinds` prints
// this table (with the CRDs' kinds), so a test can hold it against every kind the chart can render.
type served struct {
	strategy rest.RESTCreateStrategy
	resource string
}

var kinds = map[schema.GroupKind]served{
	{Group: "", Kind: "ConfigMap"}:                                   {configmap.Strategy, "configmaps"},
	{Group: "", Kind: "LimitRange"}:                                  {limitrange.Strategy, "limitranges"},
	{Group: "", Kind: "PersistentVolumeClaim"}:                       {persistentvolumeclaim.Strategy, "persistentvolumeclaims"},
	{Group: "", Kind: "Pod"}:                                         {pod.Strategy, "pods"},
	{Group: "", Kind: "PodTemplate"}:                                 {podtemplate.Strategy, "podtemplates"},
	{Group: "", Kind: "ResourceQuota"}:                               {resourcequota.Strategy, "resourcequotas"},
	{Group: "", Kind: "Secret"}:                                      {secret.Strategy, "secrets"},
	{Group: "", Kind: "Service"}:                                     {service.Strategy, "services"},
	{Group: "", Kind: "ServiceAccount"}:                              {serviceaccount.Strategy, "serviceaccounts"},
	{Group: "apps", Kind: "DaemonSet"}:                               {daemonset.Strategy, "daemonsets"},
	{Group: "apps", Kind: "Deployment"}:                              {deployment.Strategy, "deployments"},
	{Group: "apps", Kind: "ReplicaSet"}:                              {replicaset.Strategy, "replicasets"},
	{Group: "apps", Kind: "StatefulSet"}:                             {statefulset.Strategy, "statefulsets"},
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:          {horizontalpodautoscaler.Strategy, "horizontalpodautoscalers"},
	{Group: "batch", Kind: "CronJob"}:                                {cronjob.Strategy, "cronjobs"},
	{Group: "batch", Kind: "Job"}:                                    {job.Strategy, "jobs"},
	{Group: "networking.k8s.io", Kind: "Ingress"}:                    {ingress.Strategy, "ingresses"},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:              {networkpolicy.Strategy, "networkpolicies"},
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                     {runtimeclass.Strategy, "runtimeclasses"},
	{Group: "policy", Kind: "PodDisruptionBudget"}:                   {poddisruptionbudget.Strategy, "poddisruptionbudgets"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        {clusterrole.Strategy, "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: {clusterrolebinding.Strategy, "clusterrolebindings"},
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               {role.Strategy, "roles"},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        {rolebinding.Strategy, "rolebindings"},
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:              {priorityclass.Strategy, "priorityclasses"},
}

// kindEntry is one apiVersion and kind kube-validate validates, and by what.
type kindEntry struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	By         string `json:"by"` // "registry strategy" (built in) or "CRD" (from -crds)
}

// validated lists what `run` validates: every version the scheme decodes of each kind in the table, and
// every served version of the CRDs in crdDir.
func validated(crdDir string) ([]kindEntry, error) {
	var out []kindEntry
	for gk := range kinds {
		for _, gv := range legacyscheme.Scheme.PrioritizedVersionsForGroup(gk.Group) {
			if legacyscheme.Scheme.Recognizes(gv.WithKind(gk.Kind)) {
				out = append(out, kindEntry{gv.String(), gk.Kind, "registry strategy"})
			}
		}
	}
	if crdDir != "" {
		custom := newCRDs(crdDir)
		paths, err := filepath.Glob(filepath.Join(crdDir, "*.json"))
		if err != nil {
			return nil, err
		}
		for _, path := range paths {
			if err := custom.load(path); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		for gvk := range custom.kinds {
			out = append(out, kindEntry{gvk.GroupVersion().String(), gvk.Kind, "CRD"})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].APIVersion != out[j].APIVersion {
			return out[i].APIVersion < out[j].APIVersion
		}
		return out[i].Kind < out[j].Kind
	})
	return out, nil
}

// Finding is one refusal: the object, where in it, and the apiserver's message.
type Finding struct {
	Doc       int    `json:"doc"` // 0-based document index in the stream
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Field     string `json:"field"`
	Type      string `json:"type"`   // field.ErrorType, e.g. "Invalid value", "Too long"
	Detail    string `json:"detail"` // the apiserver's text for this field
	Message   string `json:"message"`
	Template  string `json:"template,omitempty"` // for an embedded pod template: its path in the object
}

type report struct {
	Kubernetes   string    `json:"kubernetes"`
	Objects      int       `json:"objects"`      // objects validated
	PodTemplates int       `json:"podTemplates"` // embedded pod templates validated
	Skipped      []string  `json:"skipped"`      // kinds with no strategy here and no CRD given
	Findings     []Finding `json:"findings"`
	Warnings     []Finding `json:"warnings"`
}

var version = "unknown" // set with -ldflags -X main.version=

func main() {
	namespace := flag.String("namespace", "default", "namespace for namespaced objects that set none (helm's --namespace)")
	crdDir := flag.String("crds", "", "folder of CRDs as JSON, one <Kind>.json each: custom resources of these kinds are validated as the apiserver would")
	showVersion := flag.Bool("version", false, "print the Kubernetes version the validation comes from")
	showKinds := flag.Bool("kinds", false, "print, as JSON, every apiVersion and kind validated (with -crds: the CRDs' too) and how")
	flag.Parse()
	if *showVersion {
		fmt.Println(version)
		return
	}
	if *showKinds {
		list, err := validated(*crdDir)
		if err == nil {
			err = json.NewEncoder(os.Stdout).Encode(list)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "kube-validate: %v\n", err)
			os.Exit(2)
		}
		return
	}
	rep, err := run(os.Stdin, *namespace, newCRDs(*crdDir))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube-validate: %v\n", err)
		os.Exit(2)
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", " ")
	if err := out.Encode(rep); err != nil {
		os.Exit(2)
	}
}

func run(in io.Reader, namespace string, custom *crds) (*report, error) {
	rep := &report{Kubernetes: version, Skipped: []string{}, Findings: []Finding{}, Warnings: []Finding{}}
	reader := utilyaml.NewYAMLReader(bufio.NewReaderSize(in, 1<<20))
	skipped := map[string]bool{}
	for doc := 0; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		js = bytes.TrimSpace(js)
		if len(js) == 0 || string(js) == "null" {
			doc--
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(js, &head); err != nil {
			return nil, fmt.Errorf("document %d: not an object: %w", doc, err)
		}
		gv, err := schema.ParseGroupVersion(head.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("document %d: apiVersion %q: %w", doc, head.APIVersion, err)
		}
		gk := schema.GroupKind{Group: gv.Group, Kind: head.Kind}
		ns := head.Metadata.Namespace
		if ns == "" {
			ns = namespace
		}
		at := Finding{Doc: doc, Kind: head.Kind, Name: head.Metadata.Name, Namespace: ns}
		if s, ok := kinds[gk]; ok {
			rep.Objects++
			errs, warns := create(js, gv.WithKind(head.Kind), s, ns)
			rep.add(at, errs, warns, "", "")
			continue
		}
		cr, err := custom.get(gv.WithKind(head.Kind))
		if err != nil {
			return nil, fmt.Errorf("loading the CRDs: %w", err)
		}
		if cr != nil {
			rep.Objects++
			obj, errs := cr.decode(js)
			var warns []string
			if obj != nil {
				errs, warns = admit(obj, gv.WithKind(head.Kind), cr.served, ns)
			}
			rep.add(at, errs, warns, "", "")
		}
		if gv.Group == "ray.io" || gk == sandboxTemplateKind {
			var obj map[string]any
			if err := json.Unmarshal(js, &obj); err != nil {
				return nil, fmt.Errorf("document %d: %w", doc, err)
			}
			for _, t := range podTemplates(head.Kind, obj) {
				rep.PodTemplates++
				errs, warns := podTemplate(t.template, ns)
				rep.add(at, errs, warns, "template", t.path)
			}
		}
		if cr == nil && !skipped[gk.String()] {
			skipped[gk.String()] = true
			rep.Skipped = append(rep.Skipped, gk.String())
		}
	}
	return rep, nil
}

// add records errors and warnings; an embedded template's paths are rebased from the PodTemplate's
// `template` onto the template's path in its object.
func (r *report) add(at Finding, errs field.ErrorList, warns []string, from, onto string) {
	rebase := func(p string) string {
		if onto == "" {
			return p
		}
		return onto + strings.TrimPrefix(p, from)
	}
	for _, e := range errs {
		if e.Field == "[]" { // field.NewPath(""): the object as a whole (e.g. a ConfigMap's total size)
			e.Field = ""
		}
		f := at
		f.Field, f.Type, f.Detail, f.Template = rebase(e.Field), string(e.Type), e.Detail, onto
		e.Field = f.Field
		f.Message = e.ErrorBody()
		if f.Field != "" {
			f.Message = f.Field + ": " + f.Message
		}
		r.Findings = append(r.Findings, f)
	}
	for _, w := range warns {
		f := at
		f.Template, f.Message = onto, w
		if onto != "" && strings.HasPrefix(w, from+".") {
			f.Message = rebase(w)
		}
		r.Warnings = append(r.Warnings, f)
	}
}

type embedded struct {
	path     string
	template any
}

// sandboxTemplateKind: agent-sandbox's SandboxTemplate, whose spec.podTemplate every sandbox's pod is made from.
var sandboxTemplateKind = schema.GroupKind{Group: "extensions.agents.x-k8s.io", Kind: "SandboxTemplate"}

// podTemplates: the pod templates KubeRay (or agent-sandbox, for a SandboxTemplate) creates pods from.
func podTemplates(kind string, obj map[string]any) []embedded {
	spec, _ := obj["spec"].(map[string]any)
	var out []embedded
	if kind == sandboxTemplateKind.Kind {
		if spec["podTemplate"] != nil {
			out = append(out, embedded{"spec.podTemplate", spec["podTemplate"]})
		}
		return out
	}
	cluster := func(c map[string]any, at string) {
		if head, ok := c["headGroupSpec"].(map[string]any); ok && head["template"] != nil {
			out = append(out, embedded{at + ".headGroupSpec.template", head["template"]})
		}
		workers, _ := c["workerGroupSpecs"].([]any)
		for i, w := range workers {
			if w, ok := w.(map[string]any); ok && w["template"] != nil {
				out = append(out, embedded{fmt.Sprintf("%s.workerGroupSpecs[%d].template", at, i), w["template"]})
			}
		}
	}
	switch kind {
	case "RayCluster":
		cluster(spec, "spec")
	case "RayJob":
		if c, ok := spec["rayClusterSpec"].(map[string]any); ok {
			cluster(c, "spec.rayClusterSpec")
		}
		if spec["submitterPodTemplate"] != nil {
			out = append(out, embedded{"spec.submitterPodTemplate", spec["submitterPodTemplate"]})
		}
	case "RayService":
		if c, ok := spec["rayClusterConfig"].(map[string]any); ok {
			cluster(c, "spec.rayClusterConfig")
		}
	}
	return out
}

// podTemplate validates one embedded template as the PodTemplate {metadata: {name: t}, template: ...}.
func podTemplate(template any, namespace string) (field.ErrorList, []string) {
	js, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "PodTemplate",
		"metadata": map[string]any{"name": "t", "namespace": namespace},
		"template": template,
	})
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("template"), err)}, nil
	}
	return create(js, schema.GroupVersionKind{Version: "v1", Kind: "PodTemplate"}, kinds[schema.GroupKind{Kind: "PodTemplate"}], namespace)
}

// create does what the apiserver's create handler does up to storage (rest.BeforeCreate), keeping
// the field errors instead of folding them into a Status.
func create(js []byte, gvk schema.GroupVersionKind, s served, namespace string) (field.ErrorList, []string) {
	obj, _, err := legacyscheme.Codecs.UniversalDecoder().Decode(js, &gvk, nil)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath(""), nil, "the apiserver cannot decode it: "+err.Error())}, nil
	}
	return admit(obj, gvk, s, namespace)
}

// admit: rest.BeforeCreate on a decoded, defaulted object.
func admit(obj runtime.Object, gvk schema.GroupVersionKind, s served, namespace string) (field.ErrorList, []string) {
	ctx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIGroup: gvk.Group, APIVersion: gvk.Version,
		Resource: s.resource, Namespace: namespace,
	})
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}, nil
	}
	if s.strategy.NamespaceScoped() {
		if accessor.GetNamespace() == "" {
			accessor.SetNamespace(namespace)
		}
		ctx = genericapirequest.WithNamespace(ctx, accessor.GetNamespace())
	} else {
		ctx = genericapirequest.WithNamespace(ctx, "")
	}
	rest.FillObjectMetaSystemFields(accessor)
	if len(accessor.GetGenerateName()) > 0 && len(accessor.GetName()) == 0 {
		accessor.SetName(accessor.GetGenerateName() + "xxxxx")
	}
	s.strategy.PrepareForCreate(ctx, obj)
	if errs := s.strategy.Validate(ctx, obj); len(errs) > 0 {
		return errs, nil
	}
	if errs := genericvalidation.ValidateObjectMetaAccessor(accessor, s.strategy.NamespaceScoped(), pathSegment, field.NewPath("metadata")); len(errs) > 0 {
		return errs, nil
	}
	return nil, s.strategy.WarningsOnCreate(ctx, obj)
}

func pathSegment(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}
