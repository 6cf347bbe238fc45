package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceFlavorSpec describes a class of nodes.
type ResourceFlavorSpec struct {
	// NodeLabels are the labels of the nodes of this flavor. They are added
	// to the nodeSelector of an admitted workload's pods.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`

	// NodeTaints are the taints of the nodes of this flavor. A workload may
	// use the flavor only if its pod template, or the flavor's tolerations,
	// tolerate every one of them.
	//
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="spec.nodeTaints[].effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	NodeTaints []corev1.Taint `json:"nodeTaints,omitempty"`

	// Tolerations are added to an admitted workload's pods.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator in ['Equal', 'Exists'])",message="spec.tolerations[].operator must be Equal or Exists"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator != 'Exists' || !has(t.value) || size(t.value) == 0)",message="spec.tolerations[].value must be empty when operator is Exists"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.effect) || size(t.effect) == 0 || t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="spec.tolerations[].effect must be empty or one of NoSchedule, PreferNoSchedule or NoExecute"
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// TopologyName is the Topology of the flavor's nodes. Every podset
	// admitted to the flavor is then placed in its fabric: in one domain of
	// the level its pod template asks for (berth.dev/podset-required-topology),
	// in as few as possible (berth.dev/podset-preferred-topology, or none),
	// only where the nodes have the room, and its pods are confined there.
	//
	// +optional
	TopologyName *TopologyReference `json:"topologyName,omitempty"`
}

// ResourceFlavor is a class of nodes, such as the nodes with H100 GPUs.
// ClusterQueues give quota per flavor.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=rf
// +kubebuilder:storageversion
type ResourceFlavor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the nodes of the flavor.
	Spec ResourceFlavorSpec `json:"spec,omitempty"`
}

// ResourceFlavorList is a list of ResourceFlavors.
//
// +kubebuilder:object:root=true
type ResourceFlavorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the ResourceFlavors.
	Items []ResourceFlavor `json:"items"`
}
