/*
 * server/ops/words.h — a mark on the sentences the server keeps in its tables or returns
 * from its checks (a framing reason, a connection's refusal), which api/ says for it in
 * the request's language (api_respond_server_reason, api/http/server_problem.h).
 * SRV_N does nothing at run time: it tells tools/lint_messages.py that the literal is
 * a message, so the catalogue (api/i18n/messages_en.c) lists it and every language can
 * have its row. The server itself knows no language.
 */
#ifndef SERVER_WORDS_H
#define SERVER_WORDS_H

#define SRV_N(msgid) msgid

#endif
