#pragma once
/// What a result was computed from: the inputs every report, check and export names. One for
/// training runs, one for serving.
namespace topoplan {

class Cluster;
struct Model;
struct JobSpec;
struct InferenceJob;
struct Calibration;

/// A training run's inputs.
struct RunContext {
  const Cluster& cluster;
  const Model& model;
  const JobSpec& job;
  const Calibration& cal;
};

/// A serving run's inputs.
struct InferenceContext {
  const Cluster& cluster;
  const Model& model;
  const InferenceJob& job;
  const Calibration& cal;
};

}  // namespace topoplan
