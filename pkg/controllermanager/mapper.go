package controllermanager

import (
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// NewRESTMapper is the manager's RESTMapper (ctrl.Options.MapperProvider):
// controller-runtime's, with the mappings it found remembered.
// controller-runtime's metadata client asks for the mapping of every
// request it sends, and every admission is one: answering from the
// priority mappers each time was 6% of the controller's allocations. A
// kind's resource does not change while its CRD is installed; a kind not
// found is asked again next time.
func NewRESTMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &rememberingMapper{RESTMapper: m}, nil
}

type rememberingMapper struct {
	meta.RESTMapper
	// mappings holds a *meta.RESTMapping per schema.GroupVersionKind.
	mappings sync.Map
}

// RESTMapping answers a mapping for one version from memory when it can.
func (m *rememberingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	key := gk.WithVersion(versions[0])
	if v, ok := m.mappings.Load(key); ok {
		mapping := *v.(*meta.RESTMapping)
		return &mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	stored := *mapping
	m.mappings.Store(key, &stored)
	return mapping, nil
}
