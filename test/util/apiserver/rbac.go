package apiserver

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The service account Berth's controller runs as, in the namespace where it
// keeps its Lease and its webhook certificate.
const (
	controllerNamespace      = "berth-system"
	controllerServiceAccount = "berth-controller"
)

// ControllerConfig reaches the server as Berth's controller: a service
// account bound to the ClusterRole and the Role that `make manifests`
// generates into config/rbac/role.yaml, and to nothing else. A manager run
// with it fails its tests when the controller needs a permission the role
// does not grant. It installs the role and its bindings the first time.
func (s *Server) ControllerConfig(ctx context.Context) (*rest.Config, error) {
	if err := s.bindControllerRole(ctx); err != nil {
		return nil, fmt.Errorf("binding the controller's role: %w", err)
	}
	cfg := rest.CopyConfig(s.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + controllerNamespace + ":" + controllerServiceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + controllerNamespace, "system:authenticated"},
	}
	return cfg, nil
}

func (s *Server) bindControllerRole(ctx context.Context) error {
	roles, err := ReadManifests(filepath.Join(RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		return err
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: controllerServiceAccount, Namespace: controllerNamespace}}
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}}}
	for _, role := range roles {
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: role.GetKind(), Name: role.GetName()}
		switch role.GetKind() {
		case "ClusterRole":
			objs = append(objs, role, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.GetName()}, RoleRef: ref, Subjects: subjects})
		case "Role":
			objs = append(objs, role, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.GetName(), Namespace: role.GetNamespace()}, RoleRef: ref, Subjects: subjects})
		default:
			return fmt.Errorf("config/rbac/role.yaml: unexpected kind %s", role.GetKind())
		}
	}
	if len(roles) == 0 {
		return fmt.Errorf("config/rbac/role.yaml holds no role")
	}
	for _, obj := range objs {
		if err := s.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
