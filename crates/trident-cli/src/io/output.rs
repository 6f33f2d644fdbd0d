//! Outputs written all-or-nothing: into a temporary file in the target's
//! directory, renamed over the target only once complete, so a failed run
//! leaves no partial output behind (and never clobbers an old file halfway).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::fail::{CliResult, io_error};

/// A file being written; becomes `target` on [`Output::commit`], vanishes if
/// dropped before.
pub struct Output {
    target: PathBuf,
    temp: PathBuf,
    writer: Option<BufWriter<File>>,
    /// What [`Output::writer`] hands out after the file was closed (never in
    /// practice: only `commit` closes it, and it consumes `self`).
    sink: std::io::Sink,
}

impl Output {
    /// Starts writing `target` (through a temporary sibling file).
    pub fn create(target: &Path) -> CliResult<Self> {
        let name = target
            .file_name()
            .ok_or_else(|| io_error(target, "not a file name"))?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".tmp-{}", std::process::id()));
        let temp = dir.join(tmp_name);
        let file =
            File::create(&temp).map_err(|e| io_error(target, format!("cannot create: {e}")))?;
        Ok(Self {
            target: target.to_path_buf(),
            temp,
            writer: Some(BufWriter::new(file)),
            sink: std::io::sink(),
        })
    }

    /// The writer; errors from it should go through [`Output::fail`].
    pub fn writer(&mut self) -> &mut dyn Write {
        match self.writer.as_mut() {
            Some(w) => w,
            None => &mut self.sink,
        }
    }

    /// An I/O error while writing this output.
    pub fn fail(&self, e: impl std::fmt::Display) -> crate::fail::Fail {
        io_error(&self.target, format!("cannot write: {e}"))
    }

    /// Flushes, syncs and renames the temporary file over the target.
    pub fn commit(mut self) -> CliResult<()> {
        if let Some(w) = self.writer.take() {
            let file = w.into_inner().map_err(|e| self.fail(e.error()))?;
            file.sync_all().map_err(|e| self.fail(e))?;
        }
        std::fs::rename(&self.temp, &self.target).map_err(|e| self.fail(e))?;
        // Renamed: nothing left for Drop to remove.
        self.temp = PathBuf::new();
        Ok(())
    }

    /// Writes all of `bytes` and commits.
    pub fn write_all_and_commit(mut self, bytes: &[u8]) -> CliResult<()> {
        let r = self.writer().write_all(bytes);
        r.map_err(|e| self.fail(e))?;
        self.commit()
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            self.writer.take();
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}
