//! `-var` and `-var-file`, as `init` and the `modules` commands take them: every value with
//! its place on the command line, so that a later one wins whichever of the two flags gave
//! it.

use std::path::PathBuf;

use clap::Args;
use tstore_tofu::static_eval::VarOption;

/// `-var` and `-var-file` of the `modules` commands, for the sources and versions tofu
/// evaluates early.
#[derive(Debug, Args)]
pub(crate) struct RootVariableArgs {
    /// A root module variable (`NAME=VALUE`), for sources and versions tofu evaluates early;
    /// repeatable.
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = in_order::<String>)]
    pub var: Vec<InOrder<String>>,
    /// A file of root module variable values; repeatable.
    #[arg(long = "var-file", value_name = "FILE", value_parser = in_order::<PathBuf>)]
    pub var_file: Vec<InOrder<PathBuf>>,
}

impl RootVariableArgs {
    /// `-var` and `-var-file` in the order they were given (a later one wins), with
    /// file paths made absolute against `cwd`.
    pub(crate) fn var_options(&self, cwd: &std::path::Path) -> Vec<VarOption> {
        var_options(&self.var, &self.var_file, cwd)
    }
}

/// `-var` and `-var-file` values in the order they were given, file paths made absolute
/// against `cwd`.
pub(crate) fn var_options(
    var: &[InOrder<String>],
    var_file: &[InOrder<PathBuf>],
    cwd: &std::path::Path,
) -> Vec<VarOption> {
    let vars = var.iter().map(|v| (v.seq, VarOption::Var(v.value.clone())));
    let files = var_file
        .iter()
        .map(|f| (f.seq, VarOption::File(cwd.join(&f.value))));
    let mut all: Vec<(usize, VarOption)> = vars.chain(files).collect();
    all.sort_by_key(|(seq, _)| *seq);
    all.into_iter().map(|(_, o)| o).collect()
}

/// A value of a repeatable option with its position among all such values, so that
/// options of different names keep the order they were given in.
#[derive(Clone, Debug)]
pub(crate) struct InOrder<T> {
    /// Position in parse order.
    pub seq: usize,
    /// The value.
    pub value: T,
}

/// clap parses values in command-line order; numbering them here records that order.
pub(crate) fn in_order<T: From<String>>(text: &str) -> Result<InOrder<T>, String> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    Ok(InOrder {
        seq: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        value: T::from(text.to_owned()),
    })
}
