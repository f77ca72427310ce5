//! The generated "Try it yourself" page of each lesson with an exercise,
//! `changes/sNN_name-exercise.md` beside the lesson's "What changed" page,
//! in every edition. It is built from the lesson's `exercise.toml` alone
//! (with the graded modules and their test counts), so no chapter and no
//! translation stamp changes when an exercise does. The words around the
//! facts are the edition's ([`ExercisePhrases`]); the todo lines and hints
//! are the toml's, in English in every edition.

use std::fmt::Write as _;

use anyhow::Result;

use super::{Exercise, graded_modules};
use crate::i18n::{self, Edition};
use crate::lessons::Lesson;

/// The page's path relative to the edition's directory.
pub fn file(lesson: &Lesson) -> String {
    format!("changes/{}-exercise.md", lesson.name)
}

/// The fixed words of the page, per edition.
pub struct ExercisePhrases {
    /// The table of contents entry.
    pub entry: &'static str,
    /// `{n}`: the lesson number.
    pub title: &'static str,
    /// `{chapter}`: a link to the chapter.
    pub intro: &'static str,
    pub what_heading: &'static str,
    /// The table's header row and rule.
    pub what_table: &'static str,
    pub graded_heading: &'static str,
    /// `{modules}`, `{count}`.
    pub graded: &'static str,
    pub commands_heading: &'static str,
    /// The commands, as a list.
    pub commands: &'static str,
    pub hints_heading: &'static str,
    /// Said once before the hints; `{note}` is empty in English.
    pub hints_intro: &'static str,
    /// `{region}`: a `<summary>` line.
    pub hint_summary: &'static str,
}

const EN: ExercisePhrases = ExercisePhrases {
    entry: "Try it yourself",
    title: "Try it yourself: lesson {n}",
    intro: "Write the heart of {chapter} yourself. The fork below is the finished lesson with \
            the code listed under \"What to write\" replaced by `todo!()`; it builds, and the \
            lesson's tests grade your attempt.",
    what_heading: "What to write",
    what_table: "| region | file | what to write |\n| --- | --- | --- |",
    graded_heading: "The graded tests",
    graded: "`cargo grade` grades the tests of {modules} ({count} tests) and reports the earlier \
             lessons' tests apart: one that fails only because it ran into your `todo!()` is \
             reported as reached through the stub, not as broken.",
    commands_heading: "The commands",
    commands: "- `cargo grade`: run the tests; it refuses to grade tests or snapshots edited \
               since the fork.\n\
               - `cargo hint [REGION]`: the next hint, one more each time.\n\
               - `cargo solution`: the course's solution beside yours, once `grade` is green \
               (`--peek` before, with a warning; `--apply` puts it in place).\n\
               - `cargo reset REGION`: the stub back in place (it asks first).",
    hints_heading: "Hints",
    hints_intro: "The same hints `cargo hint` gives, in order: open one only when you are stuck.",
    hint_summary: "Hints for `{region}`",
};

const ZH: ExercisePhrases = ExercisePhrases {
    entry: "亲手试试",
    title: "亲手试试：第 {n} 课",
    intro: "亲手写出{chapter}的核心。下面的 fork 是完成的课程，只是“要写什么”里列出的代码换成了 \
            `todo!()`；它能构建，由本课的测试给你的实现打分。",
    what_heading: "要写什么",
    what_table: "| 区域 | 文件 | 要写的内容 |\n| --- | --- | --- |",
    graded_heading: "计分的测试",
    graded: "`cargo grade` 为 {modules} 的测试打分（共 {count} 个），并把前面各课的测试分开报告：\
             只因碰到你的 `todo!()` 而失败的测试，会报告为经由桩代码到达，而不是坏了。",
    commands_heading: "命令",
    commands: "- `cargo grade`：运行测试；fork 之后改过的测试或快照，它拒绝打分。\n\
               - `cargo hint [REGION]`：下一条提示，每次多一条。\n\
               - `cargo solution`：grade 通过后，把课程的解答和你的放在一起对照（`--peek` 可提前看，\
               会有警告；`--apply` 把解答放回代码里）。\n\
               - `cargo reset REGION`：把桩代码放回去（会先问你）。",
    hints_heading: "提示",
    hints_intro: "与 `cargo hint` 给出的提示相同，按顺序排列：卡住时再打开。提示保持英文原文。",
    hint_summary: "`{region}` 的提示",
};

const JA: ExercisePhrases = ExercisePhrases {
    entry: "自分でやってみる",
    title: "自分でやってみる：レッスン {n}",
    intro: "{chapter}の核心を自分で書きます。下の fork は完成したレッスンで、「書くもの」に挙げた\
            コードだけが `todo!()` に置き換わっています。ビルドでき、レッスンのテストがあなたの\
            実装を採点します。",
    what_heading: "書くもの",
    what_table: "| 領域 | ファイル | 書く内容 |\n| --- | --- | --- |",
    graded_heading: "採点するテスト",
    graded: "`cargo grade` は {modules} のテスト（{count} 個）を採点し、前のレッスンのテストは\
             分けて報告します。あなたの `todo!()` に行き当たっただけで失敗したテストは、壊れた\
             のではなくスタブ経由で到達したと報告されます。",
    commands_heading: "コマンド",
    commands: "- `cargo grade`：テストを実行します。fork 後に編集されたテストやスナップショットは\
               採点しません。\n\
               - `cargo hint [REGION]`：次のヒントを一つずつ出します。\n\
               - `cargo solution`：grade が通ったら、コースの解答をあなたのものと並べて見せます\
               （`--peek` で先に見られますが警告が出ます。`--apply` で解答をコードに戻します）。\n\
               - `cargo reset REGION`：スタブを元に戻します（先に確認します）。",
    hints_heading: "ヒント",
    hints_intro: "`cargo hint` と同じヒントを順に並べています。行き詰まったときだけ開いてください。\
                  ヒントは英語のままです。",
    hint_summary: "`{region}` のヒント",
};

/// The phrases of `edition`.
pub fn phrases(edition: &Edition) -> &'static ExercisePhrases {
    match edition.dir {
        "zh" => &ZH,
        "ja" => &JA,
        _ => &EN,
    }
}

/// The page of `lesson`'s exercise in `edition`, under the generated
/// pages' first line `marker`. `chapter` is the link to
/// the chapter as the edition's "What changed" page writes it.
pub fn render(
    marker: &str,
    edition: &Edition,
    all: &[Lesson],
    lesson: &Lesson,
    exercise: &Exercise,
    chapter: &str,
) -> Result<String> {
    let p = phrases(edition);
    let id = lesson.id();
    let mut out = format!(
        "{marker}\n\n# {}\n\n{}\n\n",
        i18n::fill(p.title, &[("n", &lesson.number.to_string())]),
        i18n::fill(p.intro, &[("chapter", chapter)]),
    );
    let _ = write!(
        out,
        "```sh\ncargo xtask fork {id} ../my-{id} --exercise\ncd ../my-{id}\ncargo grade\n```\n\n## {}\n\n{}\n",
        p.what_heading, p.what_table
    );
    for region in &exercise.regions {
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} |",
            region.name,
            region.file.trim_start_matches("../../"),
            region.todo.replace('|', "\\|")
        );
    }
    let graded = graded_modules(all, lesson, exercise)?;
    let mut count = 0;
    for module in &graded {
        let dir = lesson.dir.join("tests/it");
        let text = std::fs::read_to_string(dir.join(format!("{module}.rs")))
            .or_else(|_| std::fs::read_to_string(dir.join(module).join("mod.rs")))
            .unwrap_or_default();
        count += text
            .lines()
            .filter(|l| {
                let l = l.trim();
                l.starts_with("#[test]") || l.starts_with("#[tokio::test")
            })
            .count();
    }
    let modules: Vec<String> = graded
        .iter()
        .map(|m| format!("`tests/it/{m}.rs`"))
        .collect();
    let _ = write!(
        out,
        "\n## {}\n\n{}\n\n## {}\n\n{}\n\n## {}\n\n{}\n",
        p.graded_heading,
        i18n::fill(
            p.graded,
            &[
                ("modules", &modules.join(", ")),
                ("count", &count.to_string())
            ]
        ),
        p.commands_heading,
        p.commands,
        p.hints_heading,
        p.hints_intro,
    );
    for region in &exercise.regions {
        let _ = write!(
            out,
            "\n<details>\n<summary>{}</summary>\n\n",
            i18n::fill(p.hint_summary, &[("region", &region.name)])
        );
        for (index, hint) in region.hints.iter().enumerate() {
            let _ = writeln!(out, "{}. {hint}", index + 1);
        }
        out.push_str("\n</details>\n");
    }
    Ok(out)
}
