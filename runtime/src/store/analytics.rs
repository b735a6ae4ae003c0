//! The SQL of [`crate::analytics`]: the summary tables of schema 8 (`activity_days`,
//! `activity_slots`, `tool_use`, `file_edits`, kept by triggers: migrations/0008_activity.sql)
//! read for a range of days, and the sessions started in it. No query reads `messages`: the
//! work grows with the days and sessions of the range, not with the messages stored.

use super::{Db, Store};
use crate::Result;
use crate::analytics::{
    Analytics, DAY_MS, DayRange, FileEdits, ProjectTime, SLOT_MS, TOP, ToolUse,
};
use rusqlite::params;
use std::collections::{BTreeMap, HashMap};

/// The figures of [`crate::read::ReadStore::analytics`] for `range`, from the summaries.
///
/// The range's summary rows are read in key order, without `GROUP BY` (each one sorted its rows
/// through a temporary B-tree: ~20-35 ms apiece for the 1 GB store's busiest 79 days, 22,117
/// `activity_days` rows) and added up here, with each session's agent and project from
/// [`SessionIndex`].
pub fn analytics(store: &Store, range: DayRange) -> Result<Analytics> {
    let c = &store.conn;
    let mut index = SessionIndex::load(store, range)?;
    let mut messages: BTreeMap<(i64, usize), i64> = BTreeMap::new();
    let (mut model_names, mut models) = (Names::default(), HashMap::<(i64, usize), i64>::new());
    {
        let mut stmt = c
            .prepare_cached(
                "SELECT day, session_id, model, messages FROM activity_days
                 WHERE day BETWEEN ?1 AND ?2",
            )
            .db()?;
        let mut rows = stmt.query(params![range.first_day, range.last_day]).db()?;
        while let Some(r) = rows.next().db()? {
            let (day, session, n): (i64, i64, i64) =
                (r.get(0).db()?, r.get(1).db()?, r.get(3).db()?);
            if let Some(info) = index.get(store, session)? {
                *messages.entry((day, info.agent)).or_default() += n;
            }
            let model = model_names.number(r.get_ref(2).db()?.as_str().unwrap_or(""));
            *models.entry((day, model)).or_default() += n;
        }
    }
    let projects = active_time(store, range, &mut index)?;
    let tools = {
        let mut stmt = c
            .prepare_cached(
                "SELECT name, calls, errors FROM tool_use ORDER BY calls DESC, name LIMIT ?1",
            )
            .db()?;
        let rows = stmt
            .query_map([TOP as i64], |r| {
                Ok(ToolUse {
                    name: r.get(0)?,
                    calls: r.get(1)?,
                    errors: r.get(2)?,
                })
            })
            .db()?;
        rows.collect::<rusqlite::Result<Vec<_>>>().db()?
    };
    let files = {
        let mut stmt = c
            .prepare_cached("SELECT path, edits FROM file_edits ORDER BY edits DESC, path LIMIT ?1")
            .db()?;
        let rows = stmt
            .query_map([TOP as i64], |r| {
                Ok(FileEdits {
                    path: r.get(0)?,
                    edits: r.get(1)?,
                })
            })
            .db()?;
        rows.collect::<rusqlite::Result<Vec<_>>>().db()?
    };
    let agent = |i: usize| index.agents.names[i].clone();
    let sessions = index
        .started
        .iter()
        .map(|(&(day, a), &n)| (day, agent(a), n))
        .collect();
    let messages = messages
        .into_iter()
        .map(|((day, a), n)| (day, agent(a), n))
        .collect();
    let mut models: Vec<(i64, String, i64)> = models
        .into_iter()
        .map(|((day, m), n)| (day, model_names.names[m].clone(), n))
        .collect();
    models.sort();
    Ok(Analytics::from_rows(
        sessions, messages, models, projects, tools, files,
    ))
}

/// Strings numbered in the order first seen (agents, projects).
#[derive(Default)]
struct Names {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Names {
    fn number(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len();
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }
}

/// A session's agent and project, as numbers of [`SessionIndex`]'s names.
#[derive(Clone, Copy)]
struct SessionInfo {
    agent: usize,
    project: usize,
}

/// The agent and project of the sessions a range's summary rows name, and the top-level
/// sessions started in the range per (day, agent).
///
/// Loaded in one read: every session when those started in the range are at least a quarter of
/// all (a table scan at ~0.5 µs a row beats ~3 µs per lookup through `sessions_by_started`),
/// else those started in the range through the index; a summary row of a session started
/// before the range (or not read) finds it by its id, once.
struct SessionIndex {
    agents: Names,
    projects: Names,
    by_id: HashMap<i64, SessionInfo>,
    started: BTreeMap<(i64, usize), i64>,
}

impl SessionIndex {
    fn load(store: &Store, range: DayRange) -> Result<SessionIndex> {
        let c = &store.conn;
        let (start, end) = (range.start_ms(), range.end_ms());
        let (total, in_range): (i64, i64) = c
            .prepare_cached(
                "SELECT (SELECT COUNT(*) FROM sessions),
                        (SELECT COUNT(*) FROM sessions WHERE started_at >= ?1 AND started_at < ?2)",
            )
            .db()?
            .query_row(params![start, end], |r| Ok((r.get(0)?, r.get(1)?)))
            .db()?;
        let mut out = SessionIndex {
            agents: Names::default(),
            projects: Names::default(),
            by_id: HashMap::with_capacity(in_range.max(0) as usize),
            started: BTreeMap::new(),
        };
        const COLUMNS: &str = "SELECT id, agent, coalesce(project_dir, ''), started_at,
                                      parent_external_id IS NULL FROM sessions";
        let mut stmt;
        let mut rows = if in_range * 4 >= total {
            stmt = c.prepare_cached(COLUMNS).db()?;
            stmt.query([]).db()?
        } else {
            stmt = c
                .prepare_cached(&format!(
                    "{COLUMNS} WHERE started_at >= ?1 AND started_at < ?2"
                ))
                .db()?;
            stmt.query(params![start, end]).db()?
        };
        while let Some(r) = rows.next().db()? {
            let id: i64 = r.get(0).db()?;
            let info = SessionInfo {
                agent: out.agents.number(r.get_ref(1).db()?.as_str().unwrap_or("")),
                project: out
                    .projects
                    .number(r.get_ref(2).db()?.as_str().unwrap_or("")),
            };
            out.by_id.insert(id, info);
            let started: Option<i64> = r.get(3).db()?;
            let top_level: bool = r.get(4).db()?;
            if let Some(t) = started.filter(|t| *t >= start && *t < end)
                && top_level
            {
                *out.started.entry((t / DAY_MS, info.agent)).or_default() += 1;
            }
        }
        Ok(out)
    }

    /// The session `id`'s agent and project; `None` for a session that does not exist.
    fn get(&mut self, store: &Store, id: i64) -> Result<Option<SessionInfo>> {
        if let Some(&info) = self.by_id.get(&id) {
            return Ok(Some(info));
        }
        let mut stmt = store
            .conn
            .prepare_cached("SELECT agent, coalesce(project_dir, '') FROM sessions WHERE id = ?1")
            .db()?;
        let mut rows = stmt.query([id]).db()?;
        let Some(r) = rows.next().db()? else {
            return Ok(None);
        };
        let info = SessionInfo {
            agent: self
                .agents
                .number(r.get_ref(0).db()?.as_str().unwrap_or("")),
            project: self
                .projects
                .number(r.get_ref(1).db()?.as_str().unwrap_or("")),
        };
        self.by_id.insert(id, info);
        Ok(Some(info))
    }
}

/// Active time per project in `range`: the slots of the range's `activity_slots` rows (read in
/// key order, slot by slot) counted once per project of their sessions. Done here rather than
/// by a `DISTINCT (project, slot)` over the join, which sorted every slot row of the range
/// through a temporary B-tree (133 ms for the 1 GB store's busiest 79 days).
fn active_time(
    store: &Store,
    range: DayRange,
    index: &mut SessionIndex,
) -> Result<Vec<ProjectTime>> {
    let c = &store.conn;
    let mut slots: Vec<i64> = Vec::new();
    let mut stmt = c
        .prepare_cached(
            "SELECT slot, session_id FROM activity_slots WHERE slot >= ?1 AND slot < ?2
             ORDER BY slot",
        )
        .db()?;
    let mut rows = stmt
        .query(params![
            range.start_ms() / SLOT_MS,
            range.end_ms() / SLOT_MS
        ])
        .db()?;
    let (mut current, mut here): (Option<i64>, Vec<usize>) = (None, Vec::new());
    while let Some(r) = rows.next().db()? {
        let (slot, session): (i64, i64) = (r.get(0).db()?, r.get(1).db()?);
        if current != Some(slot) {
            current = Some(slot);
            here.clear();
        }
        if let Some(info) = index.get(store, session)?
            && !here.contains(&info.project)
        {
            here.push(info.project);
            if slots.len() <= info.project {
                slots.resize(info.project + 1, 0);
            }
            slots[info.project] += 1;
        }
    }
    let mut out: Vec<ProjectTime> = slots
        .into_iter()
        .enumerate()
        .filter(|(_, n)| *n > 0)
        .map(|(p, n)| ProjectTime {
            project: index.projects.names[p].clone(),
            active_ms: n * SLOT_MS,
        })
        .collect();
    out.sort_by(|a, b| {
        b.active_ms
            .cmp(&a.active_ms)
            .then_with(|| a.project.cmp(&b.project))
    });
    out.truncate(TOP);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analytics::AgentDay;

    const B: i64 = 100 * DAY_MS;
    const C: i64 = 101 * DAY_MS;
    const ALL: DayRange = DayRange {
        first_day: 90,
        last_day: 110,
    };

    fn day(day: i64, agent: &str, sessions: i64, messages: i64) -> AgentDay {
        AgentDay {
            day,
            agent: agent.into(),
            sessions,
            messages,
        }
    }

    fn tool(name: &str, calls: i64, errors: i64) -> ToolUse {
        ToolUse {
            name: name.into(),
            calls,
            errors,
        }
    }

    /// The figures of a small store, computed by hand, kept exact by the triggers through a
    /// changed time, a tool result's outcome changed by an upsert, and a session deleted
    /// (its messages, tool calls and events going by `ON DELETE CASCADE`).
    #[test]
    fn figures_by_hand_through_updates_and_a_delete() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("a.db")).unwrap();
        s.conn
            .execute_batch(&format!(
                "INSERT INTO sessions (id, agent, external_id, parent_external_id, project_dir, started_at)
                 VALUES (1, 'claude', 's1', NULL, '/w/a', {B} + 3600000),
                        (2, 'codex', 's2', NULL, '/w/b', {C}),
                        (3, 'claude', 's1/agent-1', 's1', '/w/a', {B});
                 INSERT INTO messages (id, session_id, ext_id, seq, role, kind, ts, model, body, tools_text, parts_zdict)
                 VALUES (1, 1, 'u1', 0, 'user', 'text', {B}, NULL, '', '', '[]'),
                        (2, 1, 'a1', 1, 'assistant', 'tool_call', {B} + 60000, 'opus', '', '', '[]'),
                        (3, 1, 'a2', 2, 'assistant', 'text', {B} + 400000, 'opus', '', '', '[]'),
                        (4, 1, 'u2', 3, 'user', 'text', {C} + 10000, NULL, '', '', '[]'),
                        (5, 3, 'a1', 0, 'assistant', 'text', {B} + 30000, 'haiku', '', '', '[]'),
                        (6, 2, 'u1', 0, 'user', 'text', {C}, NULL, '', '', '[]'),
                        (7, 2, 'u2', 1, 'user', 'text', NULL, NULL, '', '', '[]');
                 INSERT INTO tool_calls (session_id, call_id, message_id, name, tool, is_error, has_output)
                 VALUES (1, 'c1', 2, 'Bash', 'shell', 1, 1), (1, 'c2', 2, 'Bash', 'shell', 0, 1),
                        (1, 'c3', 2, 'Read', 'read', 0, 1);
                 INSERT INTO events (session_id, message_id, seq, category, action, priority, subject)
                 VALUES (1, 2, 1, 'file', 'edited', 1, '/w/a/x.rs'),
                        (1, 2, 1, 'file', 'edited', 1, '/w/a/x.rs'),
                        (1, 2, 1, 'file', 'written', 1, '/w/a/y.rs'),
                        (1, 2, 1, 'file', 'read', 1, '/w/a/z.rs');"
            ))
            .unwrap();
        let a = analytics(&s, ALL).unwrap();
        assert_eq!(
            a.agent_days,
            [
                day(100, "claude", 1, 4),
                day(101, "claude", 0, 1),
                day(101, "codex", 1, 1)
            ]
        );
        let models: Vec<_> = a
            .model_days
            .iter()
            .map(|m| (m.day, m.model.as_str(), m.messages))
            .collect();
        assert_eq!(
            models,
            [
                (100, "", 1),
                (100, "haiku", 1),
                (100, "opus", 2),
                (101, "", 2)
            ]
        );
        // /w/a: slots 0 and 1 of day 100 (sessions 1 and 3 share slot 0) and slot 0 of day 101.
        let projects: Vec<_> = a
            .projects
            .iter()
            .map(|p| (p.project.as_str(), p.active_ms))
            .collect();
        assert_eq!(projects, [("/w/a", 3 * SLOT_MS), ("/w/b", SLOT_MS)]);
        assert_eq!(a.tools, [tool("Bash", 2, 1), tool("Read", 1, 0)]);
        let files: Vec<_> = a.files.iter().map(|f| (f.path.as_str(), f.edits)).collect();
        assert_eq!(files, [("/w/a/x.rs", 2), ("/w/a/y.rs", 1)]);
        // A range that holds day 101 only.
        let one = analytics(
            &s,
            DayRange {
                first_day: 101,
                last_day: 101,
            },
        )
        .unwrap();
        assert_eq!(
            one.agent_days,
            [day(101, "claude", 0, 1), day(101, "codex", 1, 1)]
        );
        assert_eq!(
            one.projects,
            [
                ProjectTime {
                    project: "/w/a".into(),
                    active_ms: SLOT_MS
                },
                ProjectTime {
                    project: "/w/b".into(),
                    active_ms: SLOT_MS
                }
            ]
        );

        // Message 3 moves to day 101; the failed call is upserted as a success.
        s.conn
            .execute_batch(&format!(
                "UPDATE messages SET ts = {C} + 20000 WHERE id = 3;
                 INSERT INTO tool_calls (session_id, call_id, message_id, name, tool, is_error, has_output)
                 VALUES (1, 'c1', 2, 'Bash', 'shell', 0, 1)
                 ON CONFLICT (session_id, call_id) DO UPDATE SET is_error = excluded.is_error;"
            ))
            .unwrap();
        let a = analytics(&s, ALL).unwrap();
        assert_eq!(
            a.agent_days,
            [
                day(100, "claude", 1, 3),
                day(101, "claude", 0, 2),
                day(101, "codex", 1, 1)
            ]
        );
        assert_eq!(a.projects[0].active_ms, 2 * SLOT_MS);
        assert_eq!(a.tools, [tool("Bash", 2, 0), tool("Read", 1, 0)]);

        // Session 1 deleted: only the sub-agent's message and session 2 are left.
        s.conn
            .execute_batch("DELETE FROM sessions WHERE id = 1")
            .unwrap();
        let a = analytics(&s, ALL).unwrap();
        assert_eq!(
            a.agent_days,
            [day(100, "claude", 0, 1), day(101, "codex", 1, 1)]
        );
        assert_eq!(a.tools, []);
        assert_eq!(a.files, []);
        let left: i64 = s
            .conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM activity_days) + (SELECT COUNT(*) FROM activity_slots)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        // (day 100, session 3, haiku), (day 101, session 2, ''); their two slots.
        assert_eq!(left, 4);
    }

    /// Every range's figures equal the plain `GROUP BY` over the stored rows, whichever way the
    /// sessions are read: 12 sessions started on days 90..=101 (every third a sub-agent), each
    /// with messages on its start day and the two days after (models alternating), so that a
    /// one-day range reads through `sessions_by_started` (one session in range of 12) and looks
    /// up the two older sessions whose messages fall in it, and a wide range scans them all.
    #[test]
    fn figures_equal_the_group_by_for_narrow_and_wide_ranges() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("a.db")).unwrap();
        let mut sql = String::new();
        let mut msg = 0;
        for i in 0..12i64 {
            let start = (90 + i) * DAY_MS + 1000 * i;
            let (agent, parent) = if i % 3 == 2 {
                ("claude", format!("'s{}'", i - 1))
            } else if i % 2 == 0 {
                ("claude", "NULL".to_string())
            } else {
                ("codex", "NULL".to_string())
            };
            sql += &format!(
                "INSERT INTO sessions (id, agent, external_id, parent_external_id, project_dir, started_at)
                 VALUES ({}, '{agent}', 's{i}', {parent}, '/w/p{}', {start});",
                i + 1,
                i % 4
            );
            for k in 0..3i64 {
                for j in 0..=k {
                    msg += 1;
                    let model = if (msg % 3) == 0 {
                        "NULL"
                    } else if msg % 2 == 0 {
                        "'opus'"
                    } else {
                        "'haiku'"
                    };
                    sql += &format!(
                        "INSERT INTO messages (id, session_id, ext_id, seq, role, kind, ts, model, body, tools_text, parts_zdict)
                         VALUES ({msg}, {}, 'm{msg}', {msg}, 'user', 'text', {}, {model}, '', '', '[]');",
                        i + 1,
                        start + k * DAY_MS + j * 7 * SLOT_MS
                    );
                }
            }
        }
        s.conn.execute_batch(&sql).unwrap();
        let triples = |sql: &str, a: i64, b: i64| -> Vec<(i64, String, i64)> {
            let mut stmt = s.conn.prepare(sql).unwrap();
            stmt.query_map(params![a, b], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        let mut ranges = vec![ALL];
        for first in 88..=104 {
            ranges.push(DayRange {
                first_day: first,
                last_day: first,
            });
            ranges.push(DayRange {
                first_day: first,
                last_day: first + 2,
            });
        }
        for range in ranges {
            let started = triples(
                "SELECT started_at / 86400000, agent, COUNT(*) FROM sessions
                 WHERE started_at >= ?1 AND started_at < ?2 AND parent_external_id IS NULL
                 GROUP BY 1, 2",
                range.start_ms(),
                range.end_ms(),
            );
            let messages = triples(
                "SELECT m.ts / 86400000, s.agent, COUNT(*) FROM messages m
                 JOIN sessions s ON s.id = m.session_id
                 WHERE m.ts / 86400000 BETWEEN ?1 AND ?2 GROUP BY 1, 2",
                range.first_day,
                range.last_day,
            );
            let models = triples(
                "SELECT ts / 86400000, coalesce(model, ''), COUNT(*) FROM messages
                 WHERE ts / 86400000 BETWEEN ?1 AND ?2 GROUP BY 1, 2 ORDER BY 1, 2",
                range.first_day,
                range.last_day,
            );
            let mut projects: Vec<(String, i64)> = {
                let mut stmt = s
                    .conn
                    .prepare(
                        "SELECT s.project_dir, COUNT(DISTINCT m.ts / 300000) * 300000 FROM messages m
                         JOIN sessions s ON s.id = m.session_id
                         WHERE m.ts / 86400000 BETWEEN ?1 AND ?2 GROUP BY 1",
                    )
                    .unwrap();
                stmt.query_map(params![range.first_day, range.last_day], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
            };
            projects.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let want = Analytics::from_rows(started, messages, models, Vec::new(), vec![], vec![]);
            let got = analytics(&s, range).unwrap();
            let r = (range.first_day, range.last_day);
            assert_eq!(got.agent_days, want.agent_days, "{r:?}");
            assert_eq!(got.model_days, want.model_days, "{r:?}");
            let got_projects: Vec<(String, i64)> = got
                .projects
                .iter()
                .map(|p| (p.project.clone(), p.active_ms))
                .collect();
            assert_eq!(got_projects, projects, "{r:?}");
        }
        // A narrow range by hand: day 96 has session 7 (claude, top-level, started that day) with
        // 1 message, session 6 (a claude sub-agent, day 95) with 2, session 5 (claude, day 94)
        // with 3: one session started and six messages, all claude's.
        let one = analytics(
            &s,
            DayRange {
                first_day: 96,
                last_day: 96,
            },
        )
        .unwrap();
        assert_eq!(one.agent_days, [day(96, "claude", 1, 6)]);
    }

    /// The summaries as their definition gives them, recomputed from the stored rows.
    const RECOUNT: [(&str, &str); 4] = [
        (
            "SELECT day, session_id, model, messages FROM activity_days ORDER BY 1, 2, 3",
            "SELECT ts / 86400000, session_id, coalesce(model, ''), COUNT(*) FROM messages
             WHERE ts IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        ),
        (
            "SELECT slot, session_id, messages FROM activity_slots ORDER BY 1, 2",
            "SELECT ts / 300000, session_id, COUNT(*) FROM messages
             WHERE ts IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2",
        ),
        (
            "SELECT name, calls, errors FROM tool_use ORDER BY 1",
            "SELECT name, COUNT(*), SUM(is_error != 0) FROM tool_calls GROUP BY 1 ORDER BY 1",
        ),
        (
            "SELECT path, edits FROM file_edits ORDER BY 1",
            "SELECT subject, COUNT(*) FROM events WHERE category = 'file'
             AND action IN ('edited', 'written') GROUP BY 1 ORDER BY 1",
        ),
    ];

    fn rows(s: &Store, sql: &str) -> Vec<Vec<rusqlite::types::Value>> {
        let mut stmt = s.conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| (0..n).map(|i| r.get(i)).collect())
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    fn assert_recounted(s: &Store, when: &str) -> usize {
        let mut n = 0;
        for (kept, recount) in RECOUNT {
            let (a, b) = (rows(s, kept), rows(s, recount));
            assert_eq!(a, b, "{when}: {kept}");
            n += a.len();
        }
        n
    }

    /// After real ingests (the Claude fixture session, its sub-agent, a transcript read in
    /// three growing turns) and a session delete, every summary equals its recount; and a
    /// version 7 store holding the same rows is backfilled to the same summaries.
    #[test]
    fn summaries_equal_their_recount_after_ingest_delete_and_upgrade() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/claude");
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("s.db");
        let mut s = Store::open(&path).unwrap();
        let demo = root.join("projects/-home-user-demo");
        let grow = d.path().join("grow.jsonl");
        for f in [
            demo.join("3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83.jsonl"),
            demo.join("3f2a9c4e-8b1d-4c6a-a7e5-0d9b2f6c1e83/subagents/agent-a7f3c21.jsonl"),
        ] {
            crate::ingest::ingest_file(&mut s, memtrail_adapters::Agent::Claude, &f, None).unwrap();
        }
        for turn in 1..=3 {
            std::fs::copy(root.join(format!("grow-turn{turn}.jsonl")), &grow).unwrap();
            crate::ingest::ingest_file(&mut s, memtrail_adapters::Agent::Claude, &grow, None)
                .unwrap();
        }
        let n = assert_recounted(&s, "after ingest");
        assert!(n > 10, "{n} summary rows");
        let tools = analytics(&s, ALL).unwrap().tools;
        assert!(!tools.is_empty());

        // The same rows in a version 7 store: the upgrade backfills them.
        s.conn
            .execute_batch(
                "DROP TRIGGER messages_ai_activity; DROP TRIGGER messages_ad_activity;
                 DROP TRIGGER messages_au_activity; DROP TRIGGER tool_calls_ai_use;
                 DROP TRIGGER tool_calls_ad_use; DROP TRIGGER tool_calls_au_use;
                 DROP TRIGGER events_ai_files; DROP TRIGGER events_ad_files;
                 DROP TABLE activity_days; DROP TABLE activity_slots; DROP TABLE tool_use;
                 DROP TABLE file_edits; DROP TRIGGER messages_session_last_ai;
                 DROP TRIGGER messages_session_last_au;
                 DROP TRIGGER events_snapshot_state_ad; DROP TRIGGER events_snapshot_state_au;
                 DROP TRIGGER events_snapshot_state_ai;
                 DROP TABLE snapshot_states; DROP VIEW messages_text;
                 ALTER TABLE messages RENAME COLUMN parts_zdict TO parts;
                 ALTER TABLE sessions DROP COLUMN last_message_id; PRAGMA user_version = 7;",
            )
            .unwrap();
        drop(s);
        let mut s = Store::open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), crate::store::SCHEMA_VERSION);
        assert_eq!(assert_recounted(&s, "after the upgrade"), n);

        crate::store::maintenance::delete_session(&mut s, "3f2a9c4e").unwrap();
        let left = assert_recounted(&s, "after a delete");
        assert!(left < n && left > 0, "{left} of {n}");
    }
}
