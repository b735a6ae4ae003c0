//! `memtrail import`: bring in the sessions already on this machine.

use crate::common::open_store;
use crate::output::plural;
use anyhow::Result;
use memtrail_adapters::Agent;
use memtrail_runtime::StoreLocation;
use memtrail_runtime::time::{Bound, parse_date};
use std::io::IsTerminal;
use std::process::ExitCode;

/// `memtrail import`: progress on stderr (a bar on a terminal), the summary on stdout.
pub fn import(
    db: &StoreLocation,
    agents: Vec<Agent>,
    since: Option<String>,
    json: bool,
    embed: bool,
) -> Result<ExitCode> {
    let agents = if agents.is_empty() {
        memtrail_adapters::supported_agents().to_vec()
    } else {
        agents
    };
    let since = since
        .as_deref()
        .map(|s| parse_date(s, Bound::Start))
        .transpose()?;
    let mut store = open_store(db)?;
    let tty = std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::hidden();
    let mut plain_done = 0u64;
    let mut plain_total = 0u64;
    let summary = memtrail_runtime::import::import(&mut store, &agents, since, &mut |p| match p {
        memtrail_runtime::import::Progress::Found { files, bytes } => {
            plain_total = files;
            if tty && !json {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                bar.set_length(bytes);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{spinner} importing [{bar:30}] {binary_bytes}/{binary_total_bytes} {msg}",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
            } else if !json {
                eprintln!(
                    "found {} ({bytes} bytes)",
                    plural(files, "transcript file", "transcript files")
                );
            }
        }
        memtrail_runtime::import::Progress::File {
            agent,
            path,
            bytes,
            new_messages,
        } => {
            plain_done += 1;
            if tty && !json {
                bar.inc(bytes);
                bar.set_message(format!("{plain_done}/{plain_total} files"));
            } else if !json && new_messages > 0 {
                // A transcript's path holds what its agent made of a folder's name.
                eprintln!(
                    "[{plain_done}/{plain_total}] {agent} {} +{new_messages} messages",
                    crate::output::terminal_safe(&path.display().to_string())
                );
            }
        }
    })?;
    bar.finish_and_clear();
    // After the lexical work: the new messages' vectors, when the model is installed.
    let embedded = if embed {
        crate::commands::models::embed_if_installed(&store, !json && tty)?
    } else {
        None
    };
    if json {
        let mut v = serde_json::to_value(&summary)?;
        if let Some(e) = &embedded {
            v["embedded"] = serde_json::json!({"model": e.model, "messages": e.done,
                "left": e.left, "seconds": (e.seconds * 10.0).round() / 10.0});
        }
        out!("{}", crate::output::json(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    // The agents with nothing on this machine on one line, not one line each.
    let none: Vec<&str> = summary
        .agents
        .iter()
        .filter(|a| a.files == 0 && a.unreadable.is_empty())
        .map(|a| a.agent.as_str())
        .collect();
    for a in summary
        .agents
        .iter()
        .filter(|a| a.files > 0 || !a.unreadable.is_empty())
    {
        out!(
            "{}: {} ({} with new content), {}, {}, {} updated, {} skipped ({} without a message, {} of an unknown type, {} malformed)",
            a.agent,
            plural(a.files, "file", "files"),
            a.changed_files,
            plural(a.sessions, "session", "sessions"),
            plural(a.messages, "new message", "new messages"),
            a.updated,
            plural(a.skipped_lines, "line", "lines"),
            a.skipped_lines
                .saturating_sub(a.unknown_lines)
                .saturating_sub(a.malformed_lines),
            a.unknown_lines,
            a.malformed_lines
        );
        for (p, why) in &a.unreadable {
            out!("  could not read {p}: {why}");
        }
        for (p, n) in &a.malformed_files {
            out!(
                "  {} skipped in {p}",
                plural(*n, "malformed line", "malformed lines")
            );
        }
    }
    if !none.is_empty() {
        out!("no transcripts of {}", none.join(", "));
    }
    out!("done in {:.2} s", summary.seconds);
    if let Some(e) = embedded {
        out!(
            "embedded {} with {} in {:.1} s; {} left",
            plural(e.done as u64, "message", "messages"),
            e.model,
            e.seconds,
            e.left
        );
    }
    Ok(ExitCode::SUCCESS)
}
