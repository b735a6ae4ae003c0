//! The browser's screens drawn on ratatui's `TestBackend` from states built here (no
//! terminal, no store): each compared whole, cell by cell, with the screen as it must look.

use super::app::{App, Effect, Focus, Modal};
use super::worker::{Query, Request, Response, TextKind};
use memtrail_adapters::ToolCall;
use memtrail_runtime::query::{Hit, Matched, MessageView, SessionSummary, SessionView};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Color;

/// 2026-11-29T10:11:12Z in ms.
const NOW: i64 = 1_795_947_072_000;

pub(super) fn summary(
    id: &str,
    title: &str,
    messages: i64,
    parent: Option<&str>,
) -> SessionSummary {
    SessionSummary {
        session_id: id.into(),
        agent: "claude".into(),
        machine: "laptop".into(),
        title: Some(title.into()),
        project: Some("/home/u/app".into()),
        model: None,
        git_branch: None,
        started_at: Some("2026-11-28T09:00:00.000Z".into()),
        updated_at: Some("2026-11-28T09:30:00.000Z".into()),
        messages,
        parent_session_id: parent.map(str::to_string),
    }
}

pub(super) fn message(index: i64, role: &str, text: &str) -> MessageView {
    MessageView {
        id: format!("m{index}"),
        index,
        role: role.into(),
        kind: "text".into(),
        text: text.into(),
        thinking: None,
        timestamp: Some("2026-11-28T09:0{index}:00.000Z".replace("{index}", &index.to_string())),
        model: None,
        tool_calls: Vec::new(),
    }
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn code(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

/// The screen `w`×`h` for `app`, one string per row (trailing spaces kept).
fn screen(app: &mut App, w: u16, h: u16) -> Vec<String> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    let (dw, dh) = super::ui::detail_inner(ratatui::layout::Rect::new(0, 0, w, h));
    app.layout(dw, dh);
    t.draw(|f| super::ui::draw(f, app)).unwrap();
    let buf = t.backend().buffer().clone();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect())
        .collect()
}

/// A browser showing two sessions (answer to its first request).
fn listed() -> App {
    let mut app = App::new(true, NOW, true);
    assert_eq!(
        app.outbox.drain(..).collect::<Vec<_>>(),
        vec![Request::Results {
            generation: 1,
            query: Query::default(),
            offset: 0
        }]
    );
    app.apply(Response::Sessions {
        generation: 1,
        offset: 0,
        sessions: Ok(vec![
            summary("aaaa1111", "Fix the flaky login test", 12, None),
            summary(
                "aaaa1111/agent-1",
                "Look for login tests",
                3,
                Some("aaaa1111"),
            ),
        ]),
    });
    app
}

#[test]
fn the_session_list_screen() {
    let mut app = listed();
    assert_eq!(
        screen(&mut app, 80, 14),
        [
            "┌ Search ──────────────────────────────────────────────────────────────────────┐",
            "│▏                                                                             │",
            "└──────────────────────────────────────────────────────────────────────────────┘",
            " a agent: all  p project: all  m machine: all  d date: any time                 ",
            "┌ Sessions (2) ────────────────┐┌ Session ─────────────────────────────────────┐",
            "│Fix the flaky login test      ││Enter on a session or a hit opens it here.    │",
            "│  2026-11-28 09:30 claude 12 m││                                              │",
            "│Look for login tests          ││                                              │",
            "│  2026-11-28 09:30 claude 3 ms││                                              │",
            "│                              ││                                              │",
            "│                              ││                                              │",
            "└──────────────────────────────┘└──────────────────────────────────────────────┘",
            "                                                                                ",
            " type search  ↓/Enter results  ^U clear  ^C quit                                ",
        ]
    );
}

#[test]
fn typing_searches_and_an_older_answer_is_dropped() {
    let mut app = listed();
    for c in "login".chars() {
        app.key(key(c));
    }
    // One request per keystroke, each a new generation; the worker runs only the newest.
    let sent: Vec<_> = app.outbox.drain(..).collect();
    assert_eq!(sent.len(), 5);
    assert_eq!(
        sent[4],
        Request::Results {
            generation: 6,
            query: Query {
                text: "login".into(),
                ..Query::default()
            },
            offset: 0
        }
    );
    let hit = |snippet: &str, index| Hit {
        session_id: "aaaa1111".into(),
        agent: "claude".into(),
        machine: "laptop".into(),
        title: Some("Fix the flaky login test".into()),
        project: Some("/home/u/app".into()),
        message_id: format!("m{index}"),
        message_index: index,
        role: "user".into(),
        kind: "text".into(),
        timestamp: Some("2026-11-28T09:05:00.000Z".into()),
        snippet: snippet.into(),
        score: 1.0,
        matched: None,
        copy: None,
    };
    // The answer to "logi" comes after the newer query was sent: dropped.
    app.apply(Response::Hits {
        generation: 5,
        offset: 0,
        hits: Ok(vec![hit("stale", 9)]),
        unindexed: 0,
        newest_only: false,
        hybrid: false,
    });
    assert!(!app.searching);
    app.apply(Response::Hits {
        generation: 6,
        offset: 0,
        hits: Ok(vec![hit("the \u{1}login\u{2} test fails \u{1b}[2J", 4)]),
        unindexed: 0,
        newest_only: false,
        hybrid: false,
    });
    let s = screen(&mut app, 80, 12);
    assert_eq!(
        s,
        [
            "┌ Search ──────────────────────────────────────────────────────────────────────┐",
            "│login▏                                                                        │",
            "└──────────────────────────────────────────────────────────────────────────────┘",
            " a agent: all  p project: all  m machine: all  d date: any time                 ",
            "┌ Hits (1) ────────────────────┐┌ Session ─────────────────────────────────────┐",
            "│11-28 09:05 claude #4 Fix the ││Enter on a session or a hit opens it here.    │",
            "│  the login test fails �      ││                                              │",
            "│                              ││                                              │",
            "│                              ││                                              │",
            "└──────────────────────────────┘└──────────────────────────────────────────────┘",
            "                                                                                ",
            " type search  ↓/Enter results  ^U clear  ^C quit                                ",
        ]
    );
    // The matched word is drawn bold red; the words around it are not.
    let mut t = Terminal::new(TestBackend::new(80, 12)).unwrap();
    t.draw(|f| super::ui::draw(f, &app)).unwrap();
    let buf = t.backend().buffer().clone();
    assert_eq!(buf[(7, 6)].symbol(), "l");
    assert_eq!(buf[(7, 6)].fg, Color::Red);
    assert_eq!(buf[(3, 6)].fg, Color::Reset);
}

/// A keyword search that ranked only its newest matches says so in the status line (issue 18),
/// below what an action said and what the busy store said.
#[test]
fn a_search_that_ranked_only_its_newest_matches_says_so() {
    let mut app = listed();
    app.key(key('x'));
    app.outbox.clear();
    let hit = Hit {
        session_id: "aaaa1111".into(),
        agent: "claude".into(),
        machine: "laptop".into(),
        title: Some("Fix the flaky login test".into()),
        project: Some("/home/u/app".into()),
        message_id: "m1".into(),
        message_index: 1,
        role: "user".into(),
        kind: "text".into(),
        timestamp: Some("2026-11-28T09:05:00.000Z".into()),
        snippet: "x".into(),
        score: 1.0,
        matched: None,
        copy: None,
    };
    let answer = |newest_only, unindexed| Response::Hits {
        generation: 2,
        offset: 0,
        hits: Ok(vec![hit.clone()]),
        unindexed,
        newest_only,
        hybrid: false,
    };
    let note = " ranked the newest 1024 matches only: more words or a filter reach older ones   ";
    app.apply(answer(true, 0));
    assert_eq!(screen(&mut app, 80, 12)[10], note);
    app.apply(answer(false, 0));
    assert_eq!(screen(&mut app, 80, 12)[10].trim(), "");
    app.apply(answer(true, 3));
    assert_eq!(
        screen(&mut app, 80, 12)[10].trim(),
        "3 new messages are not searchable yet (the store is busy)"
    );
}

/// A session whose messages hold escape sequences and direction overrides, open in the
/// detail pane (focus there).
fn hostile_detail() -> App {
    let mut app = listed();
    app.key(code(KeyCode::Enter)); // search line → results
    app.key(code(KeyCode::Enter)); // open the first session
    assert_eq!(app.focus, Focus::Detail);
    let sent: Vec<_> = app.outbox.drain(..).collect();
    assert_eq!(
        sent,
        vec![Request::Session {
            generation: 1,
            id: "aaaa1111".into(),
            agent: "claude".into(),
            offset: 0
        }]
    );
    let mut m1 = message(1, "assistant", "Checking the tests.");
    m1.tool_calls.push(ToolCall {
        id: "t1".into(),
        name: "Bash".into(),
        tool: "shell".into(),
        input: serde_json::json!({"command": "cargo test login"}),
        output: Some("ok 1\nok 2\nFAILED login".into()),
        is_error: false,
        exit_code: None,
    });
    app.apply(Response::Session {
        generation: 1,
        offset: 0,
        view: Ok(SessionView {
            session: summary("aaaa1111", "Fix the flaky login test", 3, None),
            offset: 0,
            total: 3,
            messages: vec![
                message(
                    0,
                    "user",
                    "copy \u{1b}]52;c;ZXZpbA==\u{7}this\u{1b}[2J now\n\u{202e}txet desrever",
                ),
                m1,
                message(2, "assistant", "The login test waits on a timer: fixed."),
            ],
            children: vec!["aaaa1111/agent-1".into()],
        }),
    });
    app
}

#[test]
fn the_detail_screen_shows_hostile_text_defused() {
    let mut app = hostile_detail();
    let s = screen(&mut app, 80, 20);
    assert_eq!(
        s,
        [
            "┌ Search ──────────────────────────────────────────────────────────────────────┐",
            "│                                                                              │",
            "└──────────────────────────────────────────────────────────────────────────────┘",
            " a agent: all  p project: all  m machine: all  d date: any time                 ",
            "┌ Sessions (2) ────────────────┐┌ Session ─────────────────────────────────────┐",
            "│Fix the flaky login test      ││Fix the flaky login test                      │",
            "│  2026-11-28 09:30 claude 12 m││aaaa1111 · claude · laptop                    │",
            "│Look for login tests          ││project /home/u/app                           │",
            "│  2026-11-28 09:30 claude 3 ms││2026-11-28 09:00 → 2026-11-28 09:30 · 3       │",
            "│                              ││messages                                      │",
            "│                              ││1 sub-agent session (S)                       │",
            "│                              ││── User #0 · 2026-11-28 09:00                 │",
            "│                              ││copy �this� now                               │",
            "│                              ││�txet desrever                                │",
            "│                              ││── Assistant #1 · 2026-11-28 09:01            │",
            "│                              ││Checking the tests.                           │",
            "│                              ││▸ Bash {\"command\":\"cargo test login\"} [3 lines│",
            "└──────────────────────────────┘└──────────────────────────────────────────────┘",
            "                                                                                ",
            " ↑↓ scroll  / find  n/N next/prev  t tools  P/S parent/sub  o pager  Esc back  ?",
        ]
    );
    // No cell holds an escape, a control character or a direction override.
    let mut t = Terminal::new(TestBackend::new(80, 20)).unwrap();
    t.draw(|f| super::ui::draw(f, &app)).unwrap();
    for cell in t.backend().buffer().content() {
        assert!(
            !cell
                .symbol()
                .chars()
                .any(|c| c.is_control() || super::sanitize::is_bidi_control(c)),
            "{:?}",
            cell.symbol()
        );
    }
}

#[test]
fn find_in_session_moves_between_matches() {
    let mut app = hostile_detail();
    screen(&mut app, 80, 20);
    app.key(key('/'));
    assert_eq!(app.modal, Modal::Find);
    for c in "LOGIN".chars() {
        app.key(key(c));
    }
    app.key(code(KeyCode::Enter));
    // Wrapped at 46 columns, "login" is on line 0 (the title), 11 (the tool call; line 3
    // wraps to 4) and 14 (the last answer).
    let s = screen(&mut app, 80, 20);
    assert_eq!(app.matches, vec![0, 11, 14]);
    assert_eq!(app.current_match, Some(0));
    assert_eq!(
        &s[4],
        "┌ Sessions (2) ────────────────┐┌ Session · find: LOGIN (1/3) ─────────────────┐"
    );
    app.key(key('n'));
    assert_eq!(app.current_match, Some(1));
    assert_eq!(app.status, "match 2 of 3");
    // Two lines of context above the match.
    assert_eq!(app.detail.as_ref().unwrap().scroll, 9);
    let s = screen(&mut app, 80, 20);
    assert_eq!(
        s[5..11],
        [
            "│Fix the flaky login test      ││── Assistant #1 · 2026-11-28 09:01            │",
            "│  2026-11-28 09:30 claude 12 m││Checking the tests.                           │",
            "│Look for login tests          ││▸ Bash {\"command\":\"cargo test login\"} [3 lines│",
            "│  2026-11-28 09:30 claude 3 ms││of output]                                    │",
            "│                              ││── Assistant #2 · 2026-11-28 09:02            │",
            "│                              ││The login test waits on a timer: fixed.       │",
        ]
    );
    app.key(key('n'));
    app.key(key('n'));
    assert_eq!(app.current_match, Some(0), "n wraps round to the first");
    app.key(key('N'));
    assert_eq!(
        app.current_match,
        Some(2),
        "N goes back, wrapping to the last"
    );
    assert_eq!(app.status, "match 3 of 3");
}

#[test]
fn delete_asks_with_what_it_deletes_and_sends_only_on_y() {
    let mut app = listed();
    app.key(code(KeyCode::Enter));
    app.key(key('D'));
    assert_eq!(
        app.outbox.drain(..).collect::<Vec<_>>(),
        vec![Request::DeleteInfo {
            id: "aaaa1111".into()
        }]
    );
    app.apply(Response::DeleteInfo {
        id: "aaaa1111".into(),
        info: Ok(memtrail_runtime::maintenance::SessionInfo {
            agent: "claude".into(),
            session_id: "aaaa1111".into(),
            title: Some("Fix the flaky login test".into()),
            project: Some("/home/u/app".into()),
            messages: 15,
            subagents: 1,
            machine: None,
            same_id: Vec::new(),
            wal_kept: false,
        }),
    });
    let s = screen(&mut app, 80, 16);
    assert_eq!(
        s[3..12],
        [
            " a agent┌ Delete ──────────────────────────────────────────────────────┐        ",
            "┌ Sessio│Delete claude session aaaa1111 (Fix the flaky login test; 15  │───────┐",
            "│Fix the│messages and 1 sub-agent session)? `memtrail sessions capture │re.    │",
            "│  2026-│aaaa1111` brings it back while its transcript is still on     │       │",
            "│Look fo│disk.                                                         │       │",
            "│  2026-│                                                              │       │",
            "│       │y: delete   any other key: keep it                            │       │",
            "│       │                                                              │       │",
            "│       └──────────────────────────────────────────────────────────────┘       │",
        ]
    );
    // Any other key keeps it.
    app.key(key('n'));
    assert!(app.outbox.is_empty());
    assert_eq!(app.status, "nothing deleted");
    // y deletes.
    app.key(key('D'));
    app.outbox.clear();
    app.modal = Modal::ConfirmDelete {
        id: "aaaa1111".into(),
        what: Some("Delete?".into()),
    };
    app.key(key('y'));
    assert_eq!(
        app.outbox.drain(..).collect::<Vec<_>>(),
        vec![Request::Delete {
            id: "aaaa1111".into()
        }]
    );
}

#[test]
fn actions_ask_the_worker_and_copy_gives_the_id() {
    let mut app = listed();
    app.key(code(KeyCode::Enter));
    app.key(key('j'));
    assert_eq!(
        app.key(key('y')),
        Some(Effect::Copy("aaaa1111/agent-1".into()))
    );
    app.key(key('r'));
    app.key(key('h'));
    assert_eq!(app.modal, Modal::PickAgent);
    app.key(key('2'));
    assert_eq!(
        app.outbox.drain(..).collect::<Vec<_>>(),
        vec![
            Request::Text {
                id: "aaaa1111/agent-1".into(),
                agent: "claude".into(),
                kind: TextKind::Snapshot
            },
            Request::Text {
                id: "aaaa1111/agent-1".into(),
                agent: "claude".into(),
                kind: TextKind::Handoff(memtrail_adapters::Agent::ALL[1])
            },
        ]
    );
    // Past the ninth agent the picker goes on with letters: `a` is the tenth.
    app.key(key('h'));
    app.key(key('a'));
    assert_eq!(
        app.outbox.drain(..).collect::<Vec<_>>(),
        vec![Request::Text {
            id: "aaaa1111/agent-1".into(),
            agent: "claude".into(),
            kind: TextKind::Handoff(memtrail_adapters::Agent::ALL[9])
        }]
    );
    // A key past the last agent picks nothing.
    app.key(key('h'));
    app.key(key('z'));
    assert!(app.outbox.is_empty());
    // P on a sub-agent opens its parent.
    app.key(key('P'));
    assert_eq!(
        app.outbox.drain(..).collect::<Vec<_>>(),
        vec![Request::Session {
            generation: 1,
            id: "aaaa1111".into(),
            agent: "claude".into(),
            offset: 0
        }]
    );
    assert_eq!(
        app.apply(Response::Text {
            title: "t".into(),
            text: Ok("body".into())
        }),
        Some(Effect::Page {
            title: "t".into(),
            text: "body".into()
        })
    );
}

#[test]
fn filters_narrow_the_query() {
    let mut app = listed();
    app.key(code(KeyCode::Enter));
    app.outbox.clear();
    app.key(key('a'));
    app.key(key('d'));
    app.key(key('d'));
    app.key(key('p'));
    let last = app.outbox.pop().unwrap();
    assert_eq!(
        last,
        Request::Results {
            generation: 5,
            query: Query {
                text: String::new(),
                agent: Some(memtrail_adapters::Agent::ALL[0].as_str().into()),
                project: Some("/home/u/app".into()),
                machine: None,
                since: Some(NOW - 7 * 86_400_000),
            },
            offset: 0
        }
    );
    assert_eq!(memtrail_adapters::Agent::ALL[0].as_str(), "claude");
    let s = screen(&mut app, 80, 12);
    assert_eq!(
        s[3],
        " a agent: claude  p project: /home/u/app  m machine: all  d date: last 7 days   "
    );
}

/// Once the worker has said which agents have sessions, `a` cycles through those only (then
/// back to all); the agent filtered on stays chosen when the list arrives after it.
#[test]
fn the_agent_filter_cycles_through_the_agents_with_sessions() {
    use memtrail_adapters::Agent;
    let mut app = listed();
    app.key(code(KeyCode::Enter));
    app.apply(Response::Agents(vec![Agent::Codex, Agent::Gemini]));
    let mut chosen = Vec::new();
    for _ in 0..3 {
        app.key(key('a'));
        chosen.push(app.query.agent.clone());
    }
    assert_eq!(
        chosen,
        [Some("codex".to_string()), Some("gemini".to_string()), None]
    );
    let s = screen(&mut app, 80, 12);
    assert!(s[3].starts_with(" a agent: all "), "{}", s[3]);
    // A filter chosen before the list came keeps its place in it.
    let mut app = listed();
    app.key(code(KeyCode::Enter));
    app.key(key('a'));
    app.key(key('a'));
    assert_eq!(app.query.agent.as_deref(), Some("codex"));
    app.apply(Response::Agents(vec![Agent::Claude, Agent::Codex]));
    app.key(key('a'));
    assert_eq!(app.query.agent, None);
    // An agent filtered on that the list lacks is added to it.
    app.key(key('a'));
    app.key(key('a'));
    app.apply(Response::Agents(vec![Agent::Gemini]));
    assert_eq!(app.query.agent.as_deref(), Some("codex"));
    assert_eq!(app.agents, [Agent::Gemini, Agent::Codex]);
    app.key(key('a'));
    assert_eq!(app.query.agent, None);
    app.key(key('a'));
    assert_eq!(app.query.agent.as_deref(), Some("gemini"));
}

#[test]
fn without_colour_nothing_is_coloured() {
    let mut app = hostile_detail();
    app.color = false;
    app.query.text = "login".into();
    let mut t = Terminal::new(TestBackend::new(80, 20)).unwrap();
    let (dw, dh) = super::ui::detail_inner(ratatui::layout::Rect::new(0, 0, 80, 20));
    app.layout(dw, dh);
    t.draw(|f| super::ui::draw(f, &app)).unwrap();
    for cell in t.backend().buffer().content() {
        assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset));
    }
}

#[test]
fn the_help_screen() {
    let mut app = listed();
    app.key(code(KeyCode::Enter));
    app.key(key('?'));
    let s = screen(&mut app, 80, 30);
    assert_eq!(
        s[7..22],
        [
            "│Loo┌ Keys ────────────────────────────────────────────────────────────────┐   │",
            "│  2│Search   type: search as you type (\"a phrase\", word*, OR, -word)      │   │",
            "│   │         ↓ Enter Esc: to the results   Ctrl-U: clear the line         │   │",
            "│   │Results  ↑↓ j k PgUp PgDn g G: move   Enter: open   s: the search line│   │",
            "│   │Detail   ↑↓ j k PgUp PgDn Space g G: scroll   t: unfold tool calls    │   │",
            "│   │         /: find in session   n N: next, previous match   Esc b: back │   │",
            "│   │Filters  a: agent   d: date   p: this project   m: this machine       │   │",
            "│   │Actions  o: open in $PAGER   y: copy the id   r: resume snapshot      │   │",
            "│   │         h: handoff for another agent   D: delete (asks first)        │   │",
            "│   │         P: parent session   S: next sub-agent session                │   │",
            "│   │Quit     q, Ctrl-C                                                    │   │",
            "│   │                                                                      │   │",
            "│   │Escape sequences and control characters in transcripts show as �.     │   │",
            "│   │Any key closes this.                                                  │   │",
            "│   └──────────────────────────────────────────────────────────────────────┘   │",
        ]
    );
    app.key(key('x'));
    assert_eq!(app.modal, Modal::None);
}

#[test]
fn base64_is_rfc_4648() {
    assert_eq!(super::base64(b""), "");
    assert_eq!(super::base64(b"f"), "Zg==");
    assert_eq!(super::base64(b"fo"), "Zm8=");
    assert_eq!(super::base64(b"foo"), "Zm9v");
    assert_eq!(super::base64(b"foobar"), "Zm9vYmFy");
}

#[test]
fn hits_come_a_page_at_a_time() {
    let mut app = listed();
    app.key(key('x'));
    app.outbox.clear();
    let hits = |n: usize| {
        (0..n)
            .map(|i| Hit {
                session_id: format!("s{i}"),
                agent: "claude".into(),
                machine: "laptop".into(),
                title: None,
                project: None,
                message_id: format!("m{i}"),
                message_index: 0,
                role: "user".into(),
                kind: "text".into(),
                timestamp: None,
                snippet: "x".into(),
                score: 1.0,
                matched: None,
                copy: None,
            })
            .collect::<Vec<_>>()
    };
    app.apply(Response::Hits {
        generation: 2,
        offset: 0,
        hits: Ok(hits(50)),
        unindexed: 0,
        newest_only: false,
        hybrid: false,
    });
    assert!(app.more, "a full page: more may follow");
    app.key(code(KeyCode::Enter));
    for _ in 0..29 {
        app.key(key('j'));
    }
    assert!(app.outbox.is_empty(), "row 29: 21 rows from the end");
    app.key(key('j'));
    // Row 30: 20 rows from the end; the next page is asked for, once.
    assert_eq!(app.selected, 30);
    assert_eq!(
        app.outbox.drain(..).collect::<Vec<_>>(),
        vec![Request::Results {
            generation: 2,
            query: Query {
                text: "x".into(),
                ..Query::default()
            },
            offset: 50
        }]
    );
    app.key(key('j'));
    assert!(app.outbox.is_empty());
    app.apply(Response::Hits {
        generation: 2,
        offset: 50,
        hits: Ok(hits(73)),
        unindexed: 0,
        newest_only: false,
        hybrid: false,
    });
    assert_eq!((app.rows.len(), app.selected, app.more), (73, 31, false));
}

#[test]
fn hybrid_ready_searches_again_and_the_title_says_hybrid() {
    let mut app = listed();
    // Without a query there is nothing to search again.
    app.apply(Response::HybridReady);
    assert!(app.outbox.is_empty());
    app.key(key('q'));
    app.outbox.clear();
    app.apply(Response::HybridReady);
    assert_eq!(
        app.outbox.drain(..).collect::<Vec<_>>(),
        vec![Request::Results {
            generation: 3,
            query: Query {
                text: "q".into(),
                ..Query::default()
            },
            offset: 0
        }]
    );
    app.apply(Response::Hits {
        generation: 3,
        offset: 0,
        hits: Ok(Vec::new()),
        unindexed: 0,
        newest_only: false,
        hybrid: true,
    });
    let s = screen(&mut app, 80, 12);
    assert_eq!(
        s[0],
        "┌ Search (hybrid: ≈ found by meaning alone) ───────────────────────────────────┐"
    );
    assert_eq!(
        &s[5],
        "│No matches.                   ││Enter on a session or a hit opens it here.    │"
    );
    // A hit found by meaning alone is marked ≈; one with the query's words is not. A hit of
    // another year shows its date.
    let hit = |i: i64, matched, ts: &str| Hit {
        session_id: format!("s{i}"),
        agent: "codex".into(),
        machine: "laptop".into(),
        title: Some("Title".into()),
        project: None,
        message_id: format!("m{i}"),
        message_index: i,
        role: "user".into(),
        kind: "text".into(),
        timestamp: Some(ts.into()),
        snippet: "text".into(),
        score: 1.0,
        matched: Some(matched),
        copy: None,
    };
    app.key(key('x'));
    app.apply(Response::Hits {
        generation: 4,
        offset: 0,
        hits: Ok(vec![
            hit(3, Matched::Words, "2026-11-30T23:59:00Z"),
            hit(12, Matched::Meaning, "2025-02-01T08:00:00Z"),
        ]),
        unindexed: 0,
        newest_only: false,
        hybrid: true,
    });
    let s = screen(&mut app, 80, 12);
    assert_eq!(
        s[5..9],
        [
            "│11-30 23:59 codex #3 Title    ││Enter on a session or a hit opens it here.    │",
            "│  text                        ││                                              │",
            "│2025-02-01 codex #12 ≈ Title  ││                                              │",
            "│  text                        ││                                              │",
        ]
    );
}

/// The detail pane wraps between words; a word longer than the line breaks where it ends, and
/// a double-width character never straddles the edge.
#[test]
fn wrap_breaks_between_words() {
    use super::app::{DocLine, LineKind, wrap};
    let wrapped = |text: &str, width: usize| -> Vec<String> {
        let l = DocLine {
            kind: LineKind::Meta,
            text: text.to_string(),
            message: Some(3),
        };
        let out = wrap(&[l], width);
        assert!(out.iter().all(|d| d.message == Some(3)));
        out.into_iter().map(|d| d.text).collect()
    };
    assert_eq!(
        wrapped("the quick brown fox", 10),
        ["the quick", "brown fox"]
    );
    assert_eq!(
        wrapped("the quick brown fox", 9),
        ["the quick", "brown fox"]
    );
    assert_eq!(
        wrapped("ab /very/long/path/x", 8),
        ["ab", "/very/lo", "ng/path/", "x"]
    );
    assert_eq!(wrapped("abcdefghijk", 5), ["abcde", "fghij", "k"]);
    assert_eq!(wrapped("a 漢字漢字", 5), ["a", "漢字", "漢字"]);
    assert_eq!(wrapped("", 5), [""]);
    assert_eq!(wrapped("  indented code", 12), ["  indented", "code"]);
    // A family emoji (a ZWJ sequence, 2 columns) is one cluster: never split, no line starts
    // with a bare joiner.
    let family = "👨\u{200d}👩\u{200d}👧\u{200d}👦";
    let lines = wrapped(&family.repeat(5), 5);
    assert_eq!(
        lines,
        [family.repeat(2), family.repeat(2), family.to_string()]
    );
    assert!(lines.iter().all(|l| !l.starts_with('\u{200d}')));
}

/// Opening a hit puts its message at the top of the pane, except where the lines after it do
/// not fill the pane: a short session then shows whole, from its header.
#[test]
fn an_opened_hit_scrolls_only_as_far_as_the_session_goes() {
    let view = |n: i64| SessionView {
        session: summary("aaaa1111", "Fix the flaky login test", n, None),
        children: Vec::new(),
        offset: 0,
        total: n,
        messages: (0..n)
            .map(|i| message(i, "user", &format!("message number {i}")))
            .collect(),
    };
    let opened = |n: i64, target: i64| {
        let mut app = listed();
        app.open("aaaa1111".into(), "claude".into(), Some(target));
        screen(&mut app, 80, 24);
        app.outbox.clear();
        app.apply(Response::Session {
            generation: app.detail_generation,
            offset: 0,
            view: Ok(view(n)),
        });
        let height = app.detail_height as usize;
        let d = app.detail.clone().unwrap();
        (d.scroll, d.lines, height)
    };
    // 3 messages fit the pane: it starts at the header.
    let (scroll, lines, height) = opened(3, 2);
    assert!(lines.len() <= height, "{lines:?}");
    assert_eq!(scroll, 0);
    // Hit #30 of 40: its heading is the pane's first line.
    let (scroll, lines, _) = opened(40, 30);
    assert_eq!(lines[scroll].message, Some(30));
    assert_eq!(lines[scroll - 1].message, Some(29));
    // Hit #39 of 40 (the last): the pane ends with the session's last line, the hit in view.
    let (scroll, lines, height) = opened(40, 39);
    // At 80×24 the pane has 16 rows: the last 8 messages (2 lines each), #32 to #39.
    assert_eq!(height, 16);
    assert_eq!(scroll + height, lines.len());
    assert_eq!(lines[scroll].message, Some(32), "{:?}", &lines[scroll..]);
}

/// The status line speaks of the last action: unfolding the tool calls (which moves the
/// matches) or leaving the session clears a "match i of n"; opening another session clears
/// what was said of the one before.
#[test]
fn the_status_line_does_not_outlive_what_it_speaks_of() {
    let mut app = hostile_detail();
    screen(&mut app, 80, 20);
    app.key(key('/'));
    for c in "login".chars() {
        app.key(key(c));
    }
    app.key(code(KeyCode::Enter));
    app.key(key('n'));
    assert_eq!(app.status, "match 2 of 3");
    app.key(key('t'));
    assert_eq!(app.status, "");
    app.key(key('n'));
    assert!(app.status.starts_with("match "), "{}", app.status);
    app.key(code(KeyCode::Esc));
    assert_eq!(app.focus, Focus::Results);
    assert_eq!(app.status, "");
    app.status = "sub-agent session 1 of 1 (P: back to the parent)".into();
    app.open("aaaa1111".into(), "claude".into(), None);
    assert_eq!(app.status, "");
}

/// A project folder too long for the results pane keeps its end, which tells projects apart.
#[test]
fn a_long_project_keeps_its_end() {
    use super::ui::keep_end;
    assert_eq!(keep_end("/home/user/service-a", 20), "/home/user/service-a");
    assert_eq!(keep_end("/home/user/service-a", 11), "…/service-a");
    assert_eq!(keep_end("/home/漢字", 4), "…字");
    assert_eq!(keep_end("/x", 0), "");
}
