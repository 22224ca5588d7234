" The agent panel's transcript (lua/gemini_companion/agent/transcript.lua) when
" tree-sitter's markdown highlighting is off or missing: nothing but the panel's
" own lines, which the transcript highlights itself, by block. (Vim's regex
" markdown syntax is not used: it stalled Neovim 150-250 ms on a 1 MB stream.)
if exists('b:current_syntax')
  finish
endif
let b:current_syntax = 'gemini_agent'
