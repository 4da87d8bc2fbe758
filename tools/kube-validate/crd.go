package main

// Custom resources (RayJob, RayCluster) validated as the apiextensions-apiserver does on create:
// prune unknown fields, apply the schema's defaults, then the custom resource strategy (OpenAPI
// schema, embedded ObjectMeta, list-type invariants and the x-kubernetes-validations CEL rules).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type crdVersion struct {
	served
	structural *structuralschema.Structural
}

// crds: the CRDs in dir as <Kind>.json (JSON: YAML of this size parses too slowly), each loaded
// when the first object of its kind arrives. Loading one costs ~15 ms, hidden behind kubeconform,
// which validates the same stream beside this process and takes longer.
type crds struct {
	dir    string
	kinds  map[schema.GroupVersionKind]*crdVersion
	loaded map[string]bool
}

func newCRDs(dir string) *crds {
	return &crds{dir: dir, kinds: map[schema.GroupVersionKind]*crdVersion{}, loaded: map[string]bool{}}
}

// get returns the custom resource version of gvk, or nil when no CRD for it was given.
func (c *crds) get(gvk schema.GroupVersionKind) (*crdVersion, error) {
	if c.dir != "" && !c.loaded[gvk.Kind] {
		c.loaded[gvk.Kind] = true
		path := filepath.Join(c.dir, gvk.Kind+".json")
		if _, err := os.Stat(path); err == nil {
			if err := c.load(path); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	return c.kinds[gvk], nil
}

func (c *crds) load(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(data, crd); err != nil {
		return err
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		val, err := apihelpers.GetSchemaForVersion(crd, v.Name)
		if err != nil || val == nil {
			return fmt.Errorf("version %s: no schema (%v)", v.Name, err)
		}
		internal := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
			return err
		}
		structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return err
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
		if err != nil {
			return err
		}
		var statusValidator apiservervalidation.SchemaValidator
		var status *apiextensionsinternal.CustomResourceSubresourceStatus
		var scale *apiextensionsinternal.CustomResourceSubresourceScale
		if sub, _ := apihelpers.GetSubresourcesForVersion(crd, v.Name); sub != nil {
			if sub.Status != nil {
				status = &apiextensionsinternal.CustomResourceSubresourceStatus{}
				if s, ok := internal.OpenAPIV3Schema.Properties["status"]; ok {
					if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&s); err != nil {
						return err
					}
				}
			}
			if sub.Scale != nil {
				scale = &apiextensionsinternal.CustomResourceSubresourceScale{}
				if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(sub.Scale, scale, nil); err != nil {
					return err
				}
			}
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		strategy := customresource.NewStrategy(unstructuredTyper{}, crd.Spec.Scope == apiextensionsv1.NamespaceScoped, gvk,
			validator, statusValidator, structural, status, scale, v.SelectableFields)
		c.kinds[gvk] = &crdVersion{served{strategy, crd.Spec.Names.Plural}, structural}
	}
	return nil
}

// decode does what the custom resource handler's decoder does: prune, coerce metadata, default.
func (v *crdVersion) decode(js []byte) (runtime.Object, field.ErrorList) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath(""), nil, "the apiserver cannot decode it: "+err.Error())}
	}
	structuralpruning.Prune(u.Object, v.structural, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, v.structural)
	if err := schemaobjectmeta.Coerce(nil, u.Object, v.structural, false, false); err != nil {
		return nil, field.ErrorList{err}
	}
	structuraldefaulting.Default(u.Object, v.structural)
	return u, nil
}

type unstructuredTyper struct{}

func (unstructuredTyper) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	return []schema.GroupVersionKind{obj.GetObjectKind().GroupVersionKind()}, false, nil
}

func (unstructuredTyper) Recognizes(schema.GroupVersionKind) bool { return true }
