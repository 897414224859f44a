# The scenario tank and Pandora both run in benches/scenario/pandora.sh, against
# nginx answering every step at once (a static login, item list, profile page and
# purchase): each run logs a user in (the next row of users.csv), takes the token,
# lists items, reads the profile (XPath), and buys two items of the list.

locals {
  json = {
    Content-Type = "application/json"
  }
}

variable_source "users" "file/csv" {
  file              = "users.csv"
  fields            = ["id", "name"]
  ignore_first_line = true
  delimiter         = ","
}

request "login" {
  method  = "POST"
  uri     = "/login"
  headers = local.json
  tag     = "login"
  body    = <<EOF
{"user": "{{.request.login.preprocessor.user.name}}", "id": "{{.request.login.preprocessor.user.id}}"}
EOF

  preprocessor {
    mapping = {
      user = "source.users[next]"
    }
  }
  postprocessor "var/jsonpath" {
    mapping = {
      token = "$.token"
    }
  }
  postprocessor "assert/response" {
    status_code = 200
    body        = ["token"]
  }
}

request "list" {
  method = "GET"
  uri    = "/items"
  tag    = "list"
  headers = merge(local.json, {
    Authorization = "Bearer {{.request.login.postprocessor.token}}"
  })

  postprocessor "var/jsonpath" {
    mapping = {
      items = "$.items"
    }
  }
}

request "profile" {
  method = "GET"
  uri    = "/profile"
  tag    = "profile"
  headers = {
    Authorization = "Bearer {{.request.login.postprocessor.token}}"
  }

  postprocessor "var/xpath" {
    mapping = {
      user = "//div[@class='user']"
    }
  }
}

request "buy" {
  method = "POST"
  uri    = "/buy/{{.request.buy.preprocessor.item}}"
  tag    = "buy"
  headers = {
    Authorization = "Bearer {{.request.login.postprocessor.token}}"
    X-User        = "{{.request.profile.postprocessor.user}}"
  }

  preprocessor {
    mapping = {
      item = "request.list.postprocessor.items[next]"
    }
  }
  postprocessor "assert/response" {
    status_code = 200
    headers = {
      X-Receipt = "R-"
    }
  }
}

scenario "shop" {
  requests = ["login", "list", "profile", "buy(2)"]
}
