//! End-to-end tests: the real `tstore` binary, a real SQLite store in a temp dir, real
//! filesystem mirrors, and the real terraform 1.0.3 as the judge of compatibility.
//! One test binary of `mod`s, so everything links once.

// Tests build their fixtures and judges with processes of their own; the product starts
// processes only through tstore_process::Command.
#![allow(clippy::disallowed_methods)]

mod bake;
mod ci_trust;
mod cli;
mod cli_config;
mod common;
mod config_loader;
mod cooldown;
mod cooldown_mirror;
mod dist;
mod early_errors;
mod file_facts;
mod flavor;
mod fuse;
mod gc;
mod gc_budget;
mod gc_ci;
mod git_cache;
mod git_submodules;
mod hardening;
mod hcl_syntax;
mod help;
mod hostile_input;
mod hostile_servers;
mod https;
mod init_many;
mod invalid_config;
mod lock_reach;
mod lockfile;
mod mirror_names;
mod mirror_reach;
mod mirror_trust;
mod module_lock;
mod module_mirror;
mod module_policy;
mod module_versions;
mod modules_fixture;
mod modules_git;
mod modules_link_or_copy;
mod modules_many_checkouts;
mod modules_registry;
mod mount_recovery;
mod no_fuse;
mod oci_credentials;
mod oci_fixture;
mod oci_modules;
mod oci_providers;
mod oci_push;
mod oci_trust;
mod origin_names;
mod output;
mod packages;
mod permissions;
mod plugin_dir;
mod process_isolation;
mod provider_signers;
mod providers;
mod providers_implied;
mod reach_window;
mod readme;
mod recipes;
mod recipes_tools;
mod reflink;
mod registry;
mod registry_packages;
mod restored_store;
mod rollback;
mod run_state;
mod selection;
mod serve;
mod serve_attacks;
mod serve_runs;
mod static_eval;
mod store;
mod store_trust;
mod store_verify;
mod terraform_first;
mod test_files;
mod tool_version;
mod weekly_workflow;
mod words;
