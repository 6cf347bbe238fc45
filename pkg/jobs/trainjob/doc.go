// Package trainjob integrates Kubeflow Trainer's TrainJobs
// (trainer.kubeflow.org/v1alpha1, module github.com/kubeflow/trainer/v2):
// one podset for each replicated job of the JobSet that Trainer renders
// from the TrainJob and the training runtime it names, admitted together
// as one Workload. The TrainJob is held through its own spec.suspend,
// which Trainer copies to its JobSet. Importing it registers the
// integration "trainer.kubeflow.org/trainjob", which the configuration's
// frameworks must name.
//
// The podsets are computed as Trainer renders the JobSet, from the API
// types alone (Trainer's runtime framework is built against another
// controller-runtime than Berth's): the runtime's template with the
// TrainJob's podSpecOverrides merged in, and the trainer step (the
// replicated job labelled trainer.kubeflow.org/trainjob-ancestor-step:
// trainer) run as one Job of spec.trainer.numNodes pods (else the
// runtime's mlPolicy.numNodes), whose "node" container asks for
// spec.trainer.resourcesPerNode. Once the TrainJob runs, they are read
// from its JobSet: what runs.
//
// Trainer's pods carry none of the TrainJob's labels, so Berth writes the
// admission into the JobSet itself (Integration.PartsCarryAdmission): the
// JobSet webhooks add the Workload's labels and the flavors' node labels
// and tolerations to its templates as Trainer unsuspends it, and refuse a
// JobSet that would run outside the TrainJob's admission, whether Trainer
// rendered it from a runtime changed since, or a user edited it.
package trainjob
