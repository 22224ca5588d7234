" The agent panel's transcript (lua/gemini_companion/agent/transcript.lua) when
" Neovim has no markdown tree-sitter parser: the regex markdown syntax. The
" panel's own lines are highlighted by the transcript itself, by block.
if exists('b:current_syntax')
  finish
endif
runtime! syntax/markdown.vim
let b:current_syntax = 'gemini_agent'
