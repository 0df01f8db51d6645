// Package crdtest checks that a CRD manifest in deploy/crds matches the Go types of its
// seed-API package: the API server serves what the manifest says, and adc decodes what the
// Go types say, so the two must not drift apart.
package crdtest

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// Want is what the manifest must declare, taken from the API package's constants.
type Want struct {
	// Path is the manifest's path, relative to the calling test's package.
	Path                                   string
	Group, Version, Plural, Kind, ListKind string
	// NamedAfter says what a cluster-scoped object is named after, for the failure message.
	NamedAfter string
	// Own is set for adc's own API (not a re-created seed API of a *.k8s.io group): it needs
	// no api-approved annotation, and adc writes its status through the status subresource.
	Own bool
}

// manifest is the subset of an apiextensions.k8s.io/v1 CRD that Check reads.
type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Scope string `json:"scope"`
		Names struct {
			Plural   string `json:"plural"`
			Singular string `json:"singular"`
			Kind     string `json:"kind"`
			ListKind string `json:"listKind"`
		} `json:"names"`
		Versions []struct {
			Name         string         `json:"name"`
			Served       bool           `json:"served"`
			Storage      bool           `json:"storage"`
			Subresources map[string]any `json:"subresources"`
			Schema       struct {
				OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// Check fails t where the manifest at w.Path does not declare w, and returns the version's
// OpenAPI schema for the caller's own checks.
func Check(t *testing.T, w Want) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(w.Path)
	if err != nil {
		t.Fatalf("reading CRD manifest: %v", err)
	}
	var crd manifest
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatalf("parsing CRD manifest %s: %v", w.Path, err)
	}
	if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" {
		t.Errorf("manifest is %s %s, want apiextensions.k8s.io/v1 CustomResourceDefinition", crd.APIVersion, crd.Kind)
	}
	if want := w.Plural + "." + w.Group; crd.Metadata.Name != want {
		t.Errorf("metadata.name = %q, want %q", crd.Metadata.Name, want)
	}
	if !w.Own && crd.Metadata.Annotations["api-approved.kubernetes.io"] == "" {
		t.Errorf("metadata.annotations lacks api-approved.kubernetes.io, which the API server requires for *.k8s.io groups")
	}
	if crd.Spec.Group != w.Group {
		t.Errorf("spec.group = %q, want %q", crd.Spec.Group, w.Group)
	}
	if crd.Spec.Scope != "Cluster" {
		t.Errorf("spec.scope = %q, want Cluster (the object is named after its %s)", crd.Spec.Scope, w.NamedAfter)
	}
	if crd.Spec.Names.Plural != w.Plural {
		t.Errorf("spec.names.plural = %q, want %q", crd.Spec.Names.Plural, w.Plural)
	}
	if crd.Spec.Names.Kind != w.Kind || crd.Spec.Names.ListKind != w.ListKind {
		t.Errorf("spec.names kind/listKind = %q/%q, want %q/%q", crd.Spec.Names.Kind, crd.Spec.Names.ListKind, w.Kind, w.ListKind)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("spec.versions has %d entries, want 1", len(crd.Spec.Versions))
	}
	v := crd.Spec.Versions[0]
	if v.Name != w.Version || !v.Served || !v.Storage {
		t.Errorf("version %q served=%v storage=%v, want %q served and stored", v.Name, v.Served, v.Storage, w.Version)
	}
	if _, ok := v.Subresources["status"]; ok && !w.Own {
		t.Errorf("status subresource is enabled; it must stay disabled so spec and status can be created in one call")
	} else if !ok && w.Own {
		t.Errorf("status subresource is disabled; adc writes its verdict through it, so that spec stays the owner's")
	}
	if v.Schema.OpenAPIV3Schema["type"] != "object" {
		t.Errorf("openAPIV3Schema.type = %v, want object (structural schema)", v.Schema.OpenAPIV3Schema["type"])
	}
	return v.Schema.OpenAPIV3Schema
}
